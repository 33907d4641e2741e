/*
 * Tengine tmfile (tm2, .tmfile): the schema as data -- the TM2_Tensor
 * data_type codes, the operator param structs (their fields and layout), the
 * operator table (TM2_OPTYPE codes of both writers -> name, ONNX operator,
 * param struct) and the enum names. See docs/formats/tmfile.md and
 * ../shared/specs/notes-tmfile.md.
 */
#include "tmfile/tmfile.h"

#include <string.h>

tio_dtype tio__tmfile_dtype(int32_t code) {
    switch (code) {
    case 0: return TIO_FLOAT32;
    case 1: return TIO_FLOAT16;
    case 2: return TIO_INT8;
    case 3: return TIO_UINT8;
    case 4: return TIO_INT32;
    case 5: return TIO_INT16;
    default: return TIO_DTYPE_INVALID;
    }
}
int tio__tmfile_dtype_code(tio_dtype d) {
    switch (d) {
    case TIO_FLOAT32: return 0;
    case TIO_FLOAT16: return 1;
    case TIO_INT8: return 2;
    case TIO_UINT8: return 3;
    case TIO_INT32: return 4;
    case TIO_INT16: return 5;
    default: return -1;
    }
}

/* ----------------------------------------------------------- param structs */

#define F(n, k) {n, k}
static const tm_field pf_bn[] = {F("rescale_factor", TF_F32), F("eps", TF_F32),
                                 F("caffe_flavor", TF_I32)};
static const tm_field pf_resize[] = {F("scale_x", TF_F32), F("scale_y", TF_F32), F("type", TF_I32)};
static const tm_field pf_axis[] = {F("axis", TF_I32)};
static const tm_field pf_conv[] = {
    F("kernel_h", TF_I32),   F("kernel_w", TF_I32),       F("stride_h", TF_I32),
    F("stride_w", TF_I32),   F("dilation_h", TF_I32),     F("dilation_w", TF_I32),
    F("input_channel", TF_I32), F("output_channel", TF_I32), F("group", TF_I32),
    F("activation", TF_I32), F("pad_h0", TF_I32),         F("pad_w0", TF_I32),
    F("pad_h1", TF_I32),     F("pad_w1", TF_I32)};
static const tm_field pf_deconv[] = {
    F("num_output", TF_I32), F("kernel_h", TF_I32),   F("kernel_w", TF_I32),
    F("stride_h", TF_I32),   F("stride_w", TF_I32),   F("pad_w0", TF_I32),
    F("pad_h0", TF_I32),     F("pad_w1", TF_I32),     F("pad_h1", TF_I32),
    F("dilation_h", TF_I32), F("dilation_w", TF_I32), F("group", TF_I32),
    F("activation", TF_I32), F("output_pad_h0", TF_I32), F("output_pad_w0", TF_I32)};
static const tm_field pf_detout[] = {F("num_classes", TF_I32), F("keep_top_k", TF_I32),
                                     F("nms_top_k", TF_I32), F("confidence_threshold", TF_F32),
                                     F("nms_threshold", TF_F32)};
static const tm_field pf_eltwise[] = {F("type", TF_U32), F("caffe_flavor", TF_I32),
                                      F("shift", TF_F32), F("power", TF_F32), F("scale", TF_F32)};
static const tm_field pf_flatten[] = {F("axis", TF_I32), F("end_axis", TF_I32)};
static const tm_field pf_fc[] = {F("num_output", TF_I32)};
static const tm_field pf_lrn[] = {F("local_size", TF_I32), F("alpha", TF_F32), F("beta", TF_F32),
                                  F("norm_region", TF_I32), F("k", TF_F32), F("bias", TF_F32),
                                  F("is_onnx", TF_BOOL)};
static const tm_field pf_normalize[] = {F("across_spatial", TF_I32), F("channel_shared", TF_I32)};
static const tm_field pf_permute[] = {F("flag", TF_I32), F("order0", TF_I32), F("order1", TF_I32),
                                      F("order2", TF_I32), F("order3", TF_I32)};
static const tm_field pf_pool[] = {
    F("alg", TF_U32),    F("kernel_h", TF_I32), F("kernel_w", TF_I32), F("stride_h", TF_I32),
    F("stride_w", TF_I32), F("global", TF_I32), F("caffe_flavor", TF_I32), F("pad_h0", TF_I32),
    F("pad_w0", TF_I32), F("pad_h1", TF_I32),   F("pad_w1", TF_I32)};
static const tm_field pf_priorbox[] = {
    F("min_size", TF_VFLOATS), F("max_size", TF_VFLOATS), F("variance", TF_VFLOATS),
    F("aspect_ratio", TF_VFLOATS), F("flip", TF_I32),   F("clip", TF_I32),
    F("img_size", TF_I32),     F("img_h", TF_I32),      F("img_w", TF_I32),
    F("step_w", TF_F32),       F("step_h", TF_F32),     F("offset", TF_F32),
    F("num_priors", TF_I32),   F("out_dim", TF_I32)};
static const tm_field pf_region[] = {F("num_classes", TF_I32), F("side", TF_I32),
                                     F("num_box", TF_I32), F("coords", TF_I32),
                                     F("confidence_threshold", TF_F32),
                                     F("nms_threshold", TF_F32), F("biases", TF_VFLOATS)};
static const tm_field pf_relu[] = {F("negative_slope", TF_F32)};
static const tm_field pf_reorg[] = {F("stride", TF_I32)};
static const tm_field pf_reshape[] = {F("is_mxnet", TF_I32), F("reverse", TF_I32),
                                      F("re_shape", TF_VDIMS), F("is_onnx", TF_I32)};
static const tm_field pf_reshape_v1[] = {F("dim_0", TF_I32), F("dim_1", TF_I32),
                                         F("dim_2", TF_I32), F("dim_3", TF_I32),
                                         F("dim_size", TF_I32), F("axis", TF_I32)};
static const tm_field pf_roipool[] = {F("pooled_h", TF_I32), F("pooled_w", TF_I32),
                                      F("spatial_scale", TF_F32)};
static const tm_field pf_rpn[] = {F("ratios", TF_VFLOATS), F("anchor_scales", TF_VFLOATS),
                                  F("feat_stride", TF_I32), F("basesize", TF_I32),
                                  F("min_size", TF_I32),   F("per_nms_topn", TF_I32),
                                  F("post_nms_topn", TF_I32), F("nms_thresh", TF_F32),
                                  F("anchors", TF_VANCHORS)};
static const tm_field pf_scale[] = {F("axis", TF_I32), F("num_axes", TF_I32),
                                    F("bias_term", TF_I32)};
static const tm_field pf_slice[] = {F("axis", TF_I32),    F("slice_points", TF_VDIMS),
                                    F("begins", TF_VDIMS), F("sizes", TF_VDIMS),
                                    F("iscaffe", TF_I32), F("ismxnet", TF_I32),
                                    F("isonnx", TF_I32),  F("begin", TF_I32),
                                    F("end", TF_I32),     F("step", TF_I32)};
static const tm_field pf_split[] = {F("axis", TF_I32), F("split_dim", TF_I32),
                                    F("is_caffe", TF_BOOL), F("is_onnx", TF_BOOL),
                                    F("split_sizes", TF_VDIMS)};
static const tm_field pf_detpost[] = {F("max_detections", TF_I32),
                                      F("max_classes_per_detection", TF_I32),
                                      F("nms_score_threshold", TF_F32),
                                      F("nms_iou_threshold", TF_F32), F("num_classes", TF_I32),
                                      F("scales", TF_VFLOATS)};
static const tm_field pf_gemm[] = {F("alpha", TF_F32), F("beta", TF_F32), F("transA", TF_I32),
                                   F("transB", TF_I32)};
static const tm_field pf_generic[] = {F("max_input_num", TF_I32), F("max_output_num", TF_I32),
                                      F("opname", TF_STR)};
static const tm_field pf_lstm[] = {
    F("forget_bias", TF_F32),  F("clip", TF_F32),        F("output_len", TF_I32),
    F("sequence_len", TF_I32), F("input_size", TF_I32),  F("hidden_size", TF_I32),
    F("cell_size", TF_I32),    F("has_peephole", TF_I32), F("has_projection", TF_I32),
    F("has_clip", TF_I32),     F("has_bias", TF_I32),    F("has_init_state", TF_I32),
    F("forget_act", TF_I32),   F("input_act", TF_I32),   F("output_act", TF_I32),
    F("cellin_act", TF_I32),   F("cellout_act", TF_I32), F("mxnet_flag", TF_I32)};
static const tm_field pf_rnn[] = {F("clip", TF_F32),         F("output_len", TF_I32),
                                  F("sequence_len", TF_I32), F("input_size", TF_I32),
                                  F("hidden_size", TF_I32),  F("has_clip", TF_I32),
                                  F("has_bias", TF_I32),     F("has_init_state", TF_I32),
                                  F("activation", TF_I32)};
static const tm_field pf_dims4[] = {F("dim_0", TF_I32), F("dim_1", TF_I32), F("dim_2", TF_I32),
                                    F("dim_3", TF_I32)};
static const tm_field pf_pad[] = {F("pad_n_0", TF_I32), F("pad_n_1", TF_I32), F("pad_c_0", TF_I32),
                                  F("pad_c_1", TF_I32), F("pad_h_0", TF_I32), F("pad_h_1", TF_I32),
                                  F("pad_w_0", TF_I32), F("pad_w_1", TF_I32), F("mode", TF_I32),
                                  F("value", TF_F32)};
static const tm_field pf_sslice[] = {
    F("begin_n", TF_I32), F("end_n", TF_I32), F("stride_n", TF_I32), F("begin_c", TF_I32),
    F("end_c", TF_I32),   F("stride_c", TF_I32), F("begin_h", TF_I32), F("end_h", TF_I32),
    F("stride_h", TF_I32), F("begin_w", TF_I32), F("end_w", TF_I32), F("stride_w", TF_I32)};
static const tm_field pf_argmax[] = {F("axis", TF_I32), F("keepdims", TF_I32)};
static const tm_field pf_topk[] = {F("k", TF_I32), F("sorted", TF_I32)};
static const tm_field pf_reduction[] = {F("dim_0", TF_I32), F("dim_1", TF_I32),
                                        F("dim_2", TF_I32), F("dim_3", TF_I32),
                                        F("type", TF_I32),  F("keepdim", TF_I32)};
static const tm_field pf_gru[] = {F("clip", TF_F32),         F("output_len", TF_I32),
                                  F("sequence_len", TF_I32), F("input_size", TF_I32),
                                  F("hidden_size", TF_I32),  F("has_clip", TF_I32),
                                  F("has_gate_bias", TF_I32), F("has_candidate_bias", TF_I32),
                                  F("has_init_state", TF_I32), F("mxnet_flag", TF_I32)};
static const tm_field pf_swapaxis[] = {F("dim_0", TF_I32), F("dim_1", TF_I32)};
static const tm_field pf_upsample[] = {F("scale", TF_F32)};
static const tm_field pf_group[] = {F("group", TF_I32)};
static const tm_field pf_s2b[] = {F("dilation_x", TF_I32), F("dilation_y", TF_I32),
                                  F("pad_top", TF_I32),    F("pad_bottom", TF_I32),
                                  F("pad_left", TF_I32),   F("pad_right", TF_I32)};
static const tm_field pf_b2s[] = {F("dilation_x", TF_I32), F("dilation_y", TF_I32),
                                  F("crop_top", TF_I32),   F("crop_bottom", TF_I32),
                                  F("crop_left", TF_I32),  F("crop_right", TF_I32)};
static const tm_field pf_crop[] = {F("num_args", TF_I32), F("offset_c", TF_I32),
                                   F("offset_h", TF_I32), F("offset_w", TF_I32),
                                   F("crop_h", TF_I32),   F("crop_w", TF_I32),
                                   F("center_crop", TF_BOOL), F("axis", TF_I32),
                                   F("flag", TF_I32)};
static const tm_field pf_roialign[] = {F("pooled_width", TF_I32), F("pooled_height", TF_I32),
                                       F("spatial_scale", TF_F32)};
static const tm_field pf_psroi[] = {F("pooled_w", TF_I32), F("pooled_h", TF_I32),
                                    F("spatial_scale", TF_F32), F("output_dim", TF_I32)};
static const tm_field pf_type[] = {F("type", TF_I32)};
static const tm_field pf_bias[] = {F("bias_size", TF_I32)};
static const tm_field pf_threshold[] = {F("threshold", TF_F32)};
static const tm_field pf_alphabeta[] = {F("alpha", TF_F32), F("beta", TF_F32)};
static const tm_field pf_embed[] = {F("num_output", TF_I32), F("input_dim", TF_I32),
                                    F("bias_term", TF_I32), F("weight_data_size", TF_I32)};
static const tm_field pf_eps[] = {F("eps", TF_F32)};
static const tm_field pf_mvn[] = {F("across_channels", TF_I32), F("normalize_variance", TF_I32),
                                  F("eps", TF_F32)};
static const tm_field pf_cast[] = {F("type_from", TF_I32), F("type_to", TF_I32)};
static const tm_field pf_interp[] = {F("resize_type", TF_I32), F("width_scale", TF_F32),
                                     F("height_scale", TF_F32), F("output_width", TF_I32),
                                     F("output_height", TF_I32)};
static const tm_field pf_selu[] = {F("alpha", TF_F32), F("lambda", TF_F32)};
static const tm_field pf_elu[] = {F("alpha", TF_F32)};
static const tm_field pf_logical[] = {F("type", TF_U32)};
static const tm_field pf_gather[] = {F("axis", TF_I32), F("indices_num", TF_I32),
                                     F("is_onnx", TF_BOOL)};
static const tm_field pf_transpose[] = {F("tr_shape", TF_VDIMS)};
static const tm_field pf_block[] = {F("block_size", TF_I32)};
static const tm_field pf_s2d[] = {F("output_shape_size0", TF_I32),
                                  F("output_shape_size1", TF_I32), F("default_value", TF_I32)};
static const tm_field pf_clip[] = {F("max", TF_F32), F("min", TF_F32)};
static const tm_field pf_unsqueeze[] = {F("axises", TF_VDIMS)};
static const tm_field pf_reducel2[] = {F("axis", TF_I32), F("keepdim", TF_I32)};
static const tm_field pf_expand[] = {F("ex_shape", TF_VDIMS), F("dim_num", TF_I32)};
static const tm_field pf_scatter[] = {F("axis", TF_I32), F("is_onnx", TF_BOOL)};
static const tm_field pf_tile[] = {F("frame_flag", TF_I32), F("reps_size", TF_I32),
                                   F("reps", TF_VDIMS)};
static const tm_field pf_l2pool[] = {F("paddingType", TF_I32), F("kernel_h", TF_I32),
                                     F("kernel_w", TF_I32), F("stride_h", TF_I32),
                                     F("stride_w", TF_I32)};
static const tm_field pf_stn[] = {F("sampler_type", TF_I32), F("transformer_type", TF_I32),
                                  F("shape_size", TF_I32), F("ta_shape", TF_VDIMS)};
#undef F

#define NF(a) ((unsigned)(sizeof a / sizeof a[0]))
#define PD(nm, a) {nm, a, NF(a), NF(a)}
#define PDO(nm, a, nold) {nm, a, NF(a), nold}
static const tm_pdef p_bn = PD("TM2_BatchNormParam", pf_bn);
static const tm_pdef p_resize = PD("TM2_ResizeParam", pf_resize);
static const tm_pdef p_concat = PD("TM2_ConcatParam", pf_axis);
static const tm_pdef p_conv = PD("TM2_ConvParam", pf_conv);
static const tm_pdef p_deconv = PDO("TM2_DeconvParam", pf_deconv, 13);
static const tm_pdef p_detout = PD("TM2_DetectionOutputParam", pf_detout);
static const tm_pdef p_eltwise = PDO("TM2_EltwiseParam", pf_eltwise, 2);
static const tm_pdef p_flatten = PD("TM2_FlattenParam", pf_flatten);
static const tm_pdef p_fc = PD("TM2_FCParam", pf_fc);
static const tm_pdef p_lrn = PDO("TM2_LRNParam", pf_lrn, 5);
static const tm_pdef p_normalize = PD("TM2_NormalizeParam", pf_normalize);
static const tm_pdef p_permute = PD("TM2_PermuteParam", pf_permute);
static const tm_pdef p_pool = PD("TM2_PoolParam", pf_pool);
static const tm_pdef p_priorbox = PD("TM2_PriorBoxParam", pf_priorbox);
static const tm_pdef p_region = PD("TM2_RegionParam", pf_region);
static const tm_pdef p_relu = PD("TM2_ReLuParam", pf_relu);
static const tm_pdef p_reorg = PD("TM2_ReorgParam", pf_reorg);
static const tm_pdef p_reshape = PDO("TM2_ReshapeParam", pf_reshape, 3);
static const tm_pdef p_reshape_v1 = PD("TM2_ReshapeParam_V1", pf_reshape_v1);
static const tm_pdef p_roipool = PD("TM2_ROIPoolingParam", pf_roipool);
static const tm_pdef p_rpn = PD("TM2_RPNParam", pf_rpn);
static const tm_pdef p_scale = PD("TM2_ScaleParam", pf_scale);
static const tm_pdef p_slice = PDO("TM2_SliceParam", pf_slice, 9);
static const tm_pdef p_softmax = PD("TM2_SoftmaxParam", pf_axis);
static const tm_pdef p_split = PD("TM2_SplitParam", pf_split);
static const tm_pdef p_detpost = PD("TM2_DetectionPostProcessParam", pf_detpost);
static const tm_pdef p_gemm = PD("TM2_GemmParam", pf_gemm);
static const tm_pdef p_generic = PD("TM2_GenericParam", pf_generic);
static const tm_pdef p_lstm = PD("TM2_LstmParam", pf_lstm);
static const tm_pdef p_rnn = PD("TM2_RnnParam", pf_rnn);
static const tm_pdef p_squeeze = PD("TM2_SqueezeParam", pf_dims4);
static const tm_pdef p_pad = PD("TM2_PadParam", pf_pad);
static const tm_pdef p_sslice = PD("TM2_StridedSliceParam", pf_sslice);
static const tm_pdef p_argmax = PDO("TM2_ArgMaxParam", pf_argmax, 1);
static const tm_pdef p_argmin = PDO("TM2_ArgMinParam", pf_argmax, 1);
static const tm_pdef p_topk = PD("TM2_TopKV2Param", pf_topk);
static const tm_pdef p_reduction = PD("TM2_ReductionParam", pf_reduction);
static const tm_pdef p_gru = PD("TM2_GRUParam", pf_gru);
static const tm_pdef p_addn = PD("TM2_AddnParam", pf_axis);
static const tm_pdef p_swapaxis = PD("TM2_SwapAxisParam", pf_swapaxis);
static const tm_pdef p_upsample = PD("TM2_UpsampleParam", pf_upsample);
static const tm_pdef p_s2b = PD("TM2_SpaceToBatchNDParam", pf_s2b);
static const tm_pdef p_b2s = PD("TM2_BatchToSpaceNDParam", pf_b2s);
static const tm_pdef p_shuffle = PD("TM2_ShuffleChannelParam", pf_group);
static const tm_pdef p_crop = PD("TM2_CropParam", pf_crop);
static const tm_pdef p_roialign = PD("TM2_RoialignParam", pf_roialign);
static const tm_pdef p_psroi = PD("TM2_PsroipoolingParam", pf_psroi);
static const tm_pdef p_unary = PD("TM2_UnaryParam", pf_type);
static const tm_pdef p_expanddims = PD("TM2_ExpanddimsParam", pf_axis);
static const tm_pdef p_bias = PD("TM2_BiasParam", pf_bias);
static const tm_pdef p_threshold = PD("TM2_ThresholdParam", pf_threshold);
static const tm_pdef p_hardsigmoid = PD("TM2_HardsigmoidParam", pf_alphabeta);
static const tm_pdef p_embed = PD("TM2_EmbedParam", pf_embed);
static const tm_pdef p_instnorm = PD("TM2_InstanceNormParam", pf_eps);
static const tm_pdef p_mvn = PD("TM2_MVNParam", pf_mvn);
static const tm_pdef p_cast = PD("TM2_CastParam", pf_cast);
static const tm_pdef p_hardswish = PD("TM2_HardSwishParam", pf_alphabeta);
static const tm_pdef p_interp = PD("TM2_InterpParam", pf_interp);
static const tm_pdef p_selu = PD("TM2_SeluParam", pf_selu);
static const tm_pdef p_elu = PD("TM2_EluParam", pf_elu);
static const tm_pdef p_logical = PD("TM2_LogicalParam", pf_logical);
static const tm_pdef p_gather = PDO("TM2_GatherParam", pf_gather, 2);
static const tm_pdef p_transpose = PD("TM2_TransposeParam", pf_transpose);
static const tm_pdef p_comparison = PD("TM2_ComparisonParam", pf_type);
static const tm_pdef p_s2depth = PD("TM2_SpaceToDepthParam", pf_block);
static const tm_pdef p_d2space = PD("TM2_DepthToSpaceParam", pf_block);
static const tm_pdef p_sparse2dense = PD("TM2_SparseToDenseParam", pf_s2d);
static const tm_pdef p_clip = PD("TM2_ClipParam", pf_clip);
static const tm_pdef p_unsqueeze = PD("TM2_UnsqueezeParam", pf_unsqueeze);
static const tm_pdef p_reducel2 = PD("TM2_ReduceL2Param", pf_reducel2);
static const tm_pdef p_expand = PD("TM2_ExpandParam", pf_expand);
static const tm_pdef p_scatter = PD("TM2_ScatterParam", pf_scatter);
static const tm_pdef p_tile = PD("TM2_TileParam", pf_tile);
static const tm_pdef p_l2pool = PD("TM2_L2PoolParam", pf_l2pool);
static const tm_pdef p_logsoftmax = PD("TM2_LogSoftmaxParam", pf_axis);
static const tm_pdef p_stn = PD("TM2_SpatialTransformerParam", pf_stn);
static const tm_pdef p_layernorm = PD("TM2_LayerNormParam", pf_eps);

/* ----------------------------------------------------------- operator table */

/* Indexed by the Tengine-lite TM2_OPTYPE code (source/serializer/tmfile/tm2_format.h). */
const tm_op tio__tmfile_ops[TM_NOPS] = {
    {"Accuracy", NULL, NULL},
    {"BatchNormalization", "BatchNormalization", &p_bn},
    {"BilinearResize", NULL, &p_resize},
    {"Concat", "Concat", &p_concat},
    {"Const", NULL, NULL},
    {"Convolution", "Conv", &p_conv},
    {"Deconvolution", "ConvTranspose", &p_deconv},
    {"DetectionOutput", NULL, &p_detout},
    {"Dropout", "Dropout", NULL},
    {"Eltwise", NULL, &p_eltwise},
    {"Flatten", "Flatten", &p_flatten},
    {"FullyConnected", "Gemm", &p_fc},
    {"InputOp", NULL, NULL},
    {"LRN", "LRN", &p_lrn},
    {"Normalize", NULL, &p_normalize},
    {"Permute", NULL, &p_permute},
    {"Pooling", NULL, &p_pool},
    {"PReLU", "PRelu", NULL},
    {"PriorBox", NULL, &p_priorbox},
    {"Region", NULL, &p_region},
    {"ReLu", NULL, &p_relu},
    {"ReLu6", NULL, NULL},
    {"Reorg", NULL, &p_reorg},
    {"Reshape", "Reshape", &p_reshape},
    {"ROIPooling", NULL, &p_roipool},
    {"RPN", NULL, &p_rpn},
    {"Scale", NULL, &p_scale},
    {"Slice", "Slice", &p_slice},
    {"Softmax", "Softmax", &p_softmax},
    {"Split", "Split", &p_split},
    {"DetectionPostProcess", NULL, &p_detpost},
    {"Gemm", "Gemm", &p_gemm},
    {"Generic", NULL, &p_generic},
    {"Logistic", NULL, NULL},
    {"LSTM", "LSTM", &p_lstm},
    {"RNN", "RNN", &p_rnn},
    {"Tanh", "Tanh", NULL},
    {"Sigmoid", "Sigmoid", NULL},
    {"Squeeze", "Squeeze", &p_squeeze},
    {"FusedBNScaleReLu", NULL, NULL},
    {"Pad", "Pad", &p_pad},
    {"StridedSlice", NULL, &p_sslice},
    {"ArgMax", "ArgMax", &p_argmax},
    {"ArgMin", "ArgMin", &p_argmin},
    {"TopKV2", "TopK", &p_topk},
    {"Reduction", NULL, &p_reduction},
    {"Max", "Max", NULL},
    {"Min", "Min", NULL},
    {"GRU", "GRU", &p_gru},
    {"AddN", "Sum", &p_addn},
    {"SwapAxis", NULL, &p_swapaxis},
    {"Upsample", "Upsample", &p_upsample},
    {"SpaceToBatchND", NULL, &p_s2b},
    {"BatchToSpaceND", NULL, &p_b2s},
    {"Resize", "Resize", &p_resize},
    {"ShuffleChannel", NULL, &p_shuffle},
    {"Crop", NULL, &p_crop},
    {"RoiAlign", "RoiAlign", &p_roialign},
    {"PsRoiPooling", NULL, &p_psroi},
    {"Unary", NULL, &p_unary},
    {"ExpandDims", NULL, &p_expanddims},
    {"Bias", NULL, &p_bias},
    {"Noop", NULL, NULL},
    {"Threshold", NULL, &p_threshold},
    {"HardSigmoid", "HardSigmoid", &p_hardsigmoid},
    {"Embed", NULL, &p_embed},
    {"InstanceNorm", "InstanceNormalization", &p_instnorm},
    {"MVN", "MeanVarianceNormalization", &p_mvn},
    {"Absval", "Abs", NULL},
    {"Cast", "Cast", &p_cast},
    {"HardSwish", "HardSwish", &p_hardswish},
    {"Interp", NULL, &p_interp},
    {"Selu", "Selu", &p_selu},
    {"Elu", "Elu", &p_elu},
    {"BroadMul", NULL, NULL},
    {"Logical", NULL, &p_logical},
    {"Gather", "Gather", &p_gather},
    {"Transpose", "Transpose", &p_transpose},
    {"Comparison", NULL, &p_comparison},
    {"SpaceToDepth", "SpaceToDepth", &p_s2depth},
    {"DepthToSpace", "DepthToSpace", &p_d2space},
    {"Reverse", NULL, NULL},
    {"SparseToDense", NULL, &p_sparse2dense},
    {"Ceil", "Ceil", NULL},
    {"SquaredDifference", NULL, NULL},
    {"Round", "Round", NULL},
    {"ZerosLike", NULL, NULL},
    {"Clip", "Clip", &p_clip},
    {"Unsqueeze", "Unsqueeze", &p_unsqueeze},
    {"ReduceL2", "ReduceL2", &p_reducel2},
    {"Mean", NULL, NULL},
    {"MatMul", "MatMul", NULL},
    {"Expand", "Expand", &p_expand},
    {"Scatter", NULL, &p_scatter},
    {"Shape", "Shape", NULL},
    {"Where", "Where", NULL},
    {"Tile", "Tile", &p_tile},
    {"Mish", "Mish", NULL},
    {"L2Pool", NULL, &p_l2pool},
    {"LogSoftmax", "LogSoftmax", &p_logsoftmax},
    {"ReLU1", NULL, NULL},
    {"L2Normalization", NULL, NULL},
    {"Softplus", "Softplus", NULL},
    {"Reciprocal", "Reciprocal", NULL},
    {NULL, NULL, NULL}, /* 104: unused */
    {"SpatialTransformer", NULL, &p_stn},
    {"Gelu", "Gelu", NULL},
    {"LayerNorm", "LayerNormalization", &p_layernorm},
};

/* The lite index of file code `code` (-1 when unknown). The old C++ table
 * (serializer/include/tengine/v2/tm2_format.h) equals lite's up to 87, then
 * 88 MatMul, 89 ReduceL2, 90 Unsqueeze. */
int tio__tmfile_lite_index(int old, uint32_t code) {
    if (old) {
        if (code < 88) return (int)code;
        if (code == 88) return OP_MATMUL;
        if (code == 89) return OP_REDUCEL2;
        if (code == 90) return OP_UNSQUEEZE;
        return -1;
    }
    if (code >= TM_NOPS || !tio__tmfile_ops[code].name) return -1;
    return (int)code;
}
/* The file code of lite index `idx` in a table (-1 when that table lacks it). */
int64_t tio__tmfile_file_code(int old, int idx) {
    if (!old) return idx;
    if (idx < 88) return idx;
    if (idx == OP_MATMUL) return 88;
    if (idx == OP_REDUCEL2) return 89;
    if (idx == OP_UNSQUEEZE) return 90;
    return -1;
}
int tio__tmfile_find_op(const char *name) {
    if (!name) return -1;
    for (int k = 0; k < TM_NOPS; k++)
        if (tio__tmfile_ops[k].name && strcmp(tio__tmfile_ops[k].name, name) == 0) return k;
    return -1;
}

/* The param struct of lite index `idx` in a table; *nf = its fields. */
const tm_pdef *tio__tmfile_param_of(int idx, int old, uint32_t op_ver, unsigned *nf) {
    const tm_pdef *pd = idx >= 0 && idx < TM_NOPS ? tio__tmfile_ops[idx].param : NULL;
    if (idx == OP_RESHAPE && old && op_ver == 1) pd = &p_reshape_v1;
    *nf = pd ? (old ? pd->n_old : pd->n) : 0;
    return pd;
}

/* Byte layout of a param struct with natural alignment: offsets of the first
 * nf fields (pos may be NULL); returns the struct size. */
unsigned tio__tmfile_layout(const tm_pdef *pd, unsigned nf, unsigned *pos) {
    unsigned at = 0;
    for (unsigned k = 0; k < nf; k++) {
        if (pd->f[k].kind != TF_BOOL) at = (at + 3u) & ~3u;
        if (pos) pos[k] = at;
        at += pd->f[k].kind == TF_BOOL ? 1u : 4u;
    }
    return (at + 3u) & ~3u;
}

/* The default TM2_Tensor.type of an output of operator `idx`. */
int32_t tio__tmfile_default_type(int idx) {
    return idx == OP_CONST ? TM_T_CONST : idx == OP_INPUT ? TM_T_INPUT : TM_T_VAR;
}

/* ----------------------------------------------------------------- enums */

const char *const tio__tmfile_eltwise_names[] = {
    "PROD", "PROD_SCALAR", "SUM", "SUM_SCALAR", "SUB", "SUB_SCALAR", "MAX", "RSQRT", "MIN_SCALAR",
    "LAST", "DIV", "LOG", "EXP", "SQRT", "FLOOR", "SQUARE", "POW", "POWER"};
const char *const tio__tmfile_eltwise_onnx[] = {"Mul", NULL,  "Add",  NULL,  "Sub",   NULL,
                                                "Max", NULL,  NULL,   NULL,  "Div",   "Log",
                                                "Exp", "Sqrt", "Floor", NULL, "Pow",  NULL};

/* orig_format names: lite (source/defines.h.in) and old C++ (exec_attr.hpp). */
const char *const tio__tmfile_orig_lite[] = {"unknown", "tengine", "caffe",  "onnx",   "mxnet",
                                             "tensorflow", "tflite", "dla", "darknet"};
const char *const tio__tmfile_orig_old[] = {"unknown",    "tengine", "caffe", "onnx",    "mxnet",
                                            "tensorflow", "tflite",  "darknet", "dla", "ncnn"};

const char *tio__tmfile_orig_name(int old, int32_t code) {
    if (code < 0) return NULL;
    if (old) return code < NORIG_OLD ? tio__tmfile_orig_old[code] : NULL;
    return code < NORIG_LITE ? tio__tmfile_orig_lite[code] : NULL;
}

const char *tio__tmfile_layout_name(int32_t v) {
    return v == 0 ? "NCHW" : v == 1 ? "NHWC" : NULL;
}

/* The enum label of a param field value, or NULL. */
const char *tio__tmfile_label(int idx, const char *field, int64_t v) {
    if (idx == OP_ELTWISE && strcmp(field, "type") == 0)
        return v >= 0 && v < (int64_t)(sizeof tio__tmfile_eltwise_names /
                                       sizeof tio__tmfile_eltwise_names[0])
                   ? tio__tmfile_eltwise_names[v]
                   : NULL;
    if (idx == OP_POOL && strcmp(field, "alg") == 0) return v == 0 ? "max" : v == 1 ? "avg" : NULL;
    if ((idx == OP_CONV || idx == 6) && strcmp(field, "activation") == 0)
        return v == -1 ? "none" : v == 0 ? "relu" : v == 6 ? "relu6" : NULL;
    return NULL;
}

bool tio__tmfile_storage_attr(const char *name) {
    static const char *const storage[] = {"tm2_layout", "tm2_type", "tm2_buffer_size",
                                          "tm2_op_ver", "tm2_dynamic_shape"};
    for (size_t k = 0; k < sizeof storage / sizeof storage[0]; k++)
        if (strcmp(name, storage[k]) == 0) return true;
    return false;
}

bool tio__tmfile_idle_attr(const char *op, const char *name) {
    if (strcmp(op, "GlobalAveragePool") != 0 && strcmp(op, "GlobalMaxPool") != 0) return false;
    return strncmp(name, "tmfile.kernel_", 14) == 0 || strncmp(name, "tmfile.stride_", 14) == 0 ||
           strncmp(name, "tmfile.pad_", 11) == 0;
}

bool tio__tmfile_private_attr(const char *name) {
    return strncmp(name, "tm2_", 4) == 0 || strncmp(name, "tmfile.", 7) == 0;
}
