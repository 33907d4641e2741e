/*
 * Tengine tmfile (tm2, .tmfile): Tengine's model format.
 *
 * Little-endian C structs at absolute u32 offsets (0 = not set): a 12-byte
 * TM2_Header whose offset_root names the 16-byte TM2_Model; the model names a
 * vector of subgraphs (always one); the subgraph names the vectors of nodes,
 * tensors and buffers and the input/output *node* indices. Two writers exist:
 * Tengine-lite's tools/save_graph (40-byte TM2_Subgraph, the operator table
 * with 108 codes) and the old C++ Tengine (36-byte subgraph, a model name,
 * codes 88..90 numbered differently, some shorter param structs).
 *
 * Read: every offset, size and count is checked before use; constants with
 * data become tensors of the container (views into the file), the whole
 * model becomes the container's graph (one value per tensor, one node per
 * node, params as attributes). Write: the order, numbering and 4-byte
 * alignment of the official writer, zeros in every byte it leaves
 * uninitialised. See docs/formats/tmfile.md and ../shared/specs/notes-tmfile.md.
 */
#include "core/internal.h"
#include "graph/budget.h"
#include "graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TM_FMT "tmfile"
#define TM_HEADER_LEN 12u
#define TM_MODEL_LEN 16u
#define TM_SUB_LITE 40u
#define TM_SUB_OLD 36u
#define TM_NODE_LEN 28u
#define TM_OP_LEN 12u
#define TM_TENSOR_LEN 32u
#define TM_BUFFER_LEN 8u
#define TM_STRING_LEN 8u
#define TM_QUANT_LEN 12u
#define TM_MAX_DIMS 8u      /* Tengine's MAX_SHAPE_DIM_NUM */
#define TM_RAW_PARAM_MAX 4096u
#define TM_NOPS 108

/* Tensor types and the element types of TM2_Tensor.data_type. */
enum { TM_T_UNKNOWN = 0, TM_T_VAR = 1, TM_T_CONST = 2, TM_T_INPUT = 3, TM_T_DEP = 4 };

static tio_dtype tm_dtype(int32_t code) {
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
static int tm_dtype_code(tio_dtype d) {
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

/* Field kinds of an operator param struct. The offset kinds name a child
 * object (a vector or a string) written before the struct. */
enum {
    TF_I32,
    TF_U32,
    TF_F32,
    TF_BOOL,     /* tm_bool_t: one byte, then struct padding */
    TF_VDIMS,    /* offset of a TM2_Vector_dims -> INTS */
    TF_VFLOATS,  /* offset of a TM2_Vector_floats -> FLOATS */
    TF_VANCHORS, /* offset of a TM2_Vector_anchors -> FLOATS, 4 per anchor */
    TF_STR       /* offset of a TM2_String -> STRING */
};

typedef struct tm_field {
    const char *name; /* the attribute name: the struct field, or for an
                         offset field the name without "offset_..._" */
    int kind;
} tm_field;

typedef struct tm_pdef {
    const char *name; /* "TM2_ConvParam" */
    const tm_field *f;
    unsigned n;     /* fields in Tengine-lite */
    unsigned n_old; /* fields in the old C++ struct (a prefix of lite's) */
} tm_pdef;

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

typedef struct tm_op {
    const char *name;    /* the TM2_OPTYPE name (as in notes-tmfile.md) */
    const char *onnx;    /* the ONNX operator, or NULL (Pooling, ReLu and Eltwise
                            are named from their params) */
    const tm_pdef *param; /* NULL: the operator has no param */
} tm_op;

/* Indexed by the Tengine-lite TM2_OPTYPE code (source/serializer/tmfile/tm2_format.h). */
static const tm_op tm_ops[TM_NOPS] = {
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

enum {
    OP_CONST = 4,
    OP_CONV = 5,
    OP_ELTWISE = 9,
    OP_INPUT = 12,
    OP_POOL = 16,
    OP_RELU = 20,
    OP_RESHAPE = 23,
    OP_UNSQUEEZE = 88,
    OP_REDUCEL2 = 89,
    OP_MATMUL = 91
};

/* The lite index of file code `code` (-1 when unknown). The old C++ table
 * (serializer/include/tengine/v2/tm2_format.h) equals lite's up to 87, then
 * 88 MatMul, 89 ReduceL2, 90 Unsqueeze. */
static int tm_lite_index(int old, uint32_t code) {
    if (old) {
        if (code < 88) return (int)code;
        if (code == 88) return OP_MATMUL;
        if (code == 89) return OP_REDUCEL2;
        if (code == 90) return OP_UNSQUEEZE;
        return -1;
    }
    if (code >= TM_NOPS || !tm_ops[code].name) return -1;
    return (int)code;
}
/* The file code of lite index `idx` in a table (-1 when that table lacks it). */
static int64_t tm_file_code(int old, int idx) {
    if (!old) return idx;
    if (idx < 88) return idx;
    if (idx == OP_MATMUL) return 88;
    if (idx == OP_REDUCEL2) return 89;
    if (idx == OP_UNSQUEEZE) return 90;
    return -1;
}
static int tm_find_op(const char *name) {
    if (!name) return -1;
    for (int k = 0; k < TM_NOPS; k++)
        if (tm_ops[k].name && strcmp(tm_ops[k].name, name) == 0) return k;
    return -1;
}

/* The param struct of lite index `idx` in a table; *nf = its fields. */
static const tm_pdef *tm_param_of(int idx, int old, uint32_t op_ver, unsigned *nf) {
    const tm_pdef *pd = idx >= 0 && idx < TM_NOPS ? tm_ops[idx].param : NULL;
    if (idx == OP_RESHAPE && old && op_ver == 1) pd = &p_reshape_v1;
    *nf = pd ? (old ? pd->n_old : pd->n) : 0;
    return pd;
}

/* Byte layout of a param struct with natural alignment: offsets of the first
 * nf fields (pos may be NULL); returns the struct size. */
static unsigned tm_layout(const tm_pdef *pd, unsigned nf, unsigned *pos) {
    unsigned at = 0;
    for (unsigned k = 0; k < nf; k++) {
        if (pd->f[k].kind != TF_BOOL) at = (at + 3u) & ~3u;
        if (pos) pos[k] = at;
        at += pd->f[k].kind == TF_BOOL ? 1u : 4u;
    }
    return (at + 3u) & ~3u;
}

/* ----------------------------------------------------------------- enums */

static const char *const eltwise_names[] = {
    "PROD", "PROD_SCALAR", "SUM", "SUM_SCALAR", "SUB", "SUB_SCALAR", "MAX", "RSQRT", "MIN_SCALAR",
    "LAST", "DIV", "LOG", "EXP", "SQRT", "FLOOR", "SQUARE", "POW", "POWER"};
#define ELT_POWER 17
static const char *const eltwise_onnx[] = {"Mul", NULL,  "Add",  NULL,  "Sub",   NULL,
                                           "Max", NULL,  NULL,   NULL,  "Div",   "Log",
                                           "Exp", "Sqrt", "Floor", NULL, "Pow",  NULL};

/* orig_format names: lite (source/defines.h.in) and old C++ (exec_attr.hpp). */
static const char *const orig_lite[] = {"unknown", "tengine", "caffe",  "onnx",   "mxnet",
                                        "tensorflow", "tflite", "dla", "darknet"};
static const char *const orig_old[] = {"unknown",    "tengine", "caffe", "onnx",    "mxnet",
                                       "tensorflow", "tflite",  "darknet", "dla", "ncnn"};
#define NORIG_LITE 9
#define NORIG_OLD 10

static const char *tm_orig_name(int old, int32_t code) {
    if (code < 0) return NULL;
    if (old) return code < NORIG_OLD ? orig_old[code] : NULL;
    return code < NORIG_LITE ? orig_lite[code] : NULL;
}

static const char *tm_layout_name(int32_t v) {
    return v == 0 ? "NCHW" : v == 1 ? "NHWC" : NULL;
}

/* The enum label of a param field value, or NULL. */
static const char *tm_label(int idx, const char *field, int64_t v) {
    if (idx == OP_ELTWISE && strcmp(field, "type") == 0)
        return v >= 0 && v < (int64_t)(sizeof eltwise_names / sizeof eltwise_names[0])
                   ? eltwise_names[v]
                   : NULL;
    if (idx == OP_POOL && strcmp(field, "alg") == 0) return v == 0 ? "max" : v == 1 ? "avg" : NULL;
    if ((idx == OP_CONV || idx == 6) && strcmp(field, "activation") == 0)
        return v == -1 ? "none" : v == 0 ? "relu" : v == 6 ? "relu6" : NULL;
    return NULL;
}

/* ----------------------------------------------------------------- probe */

static int tm_probe(const uint8_t *d, size_t n) {
    if (n < TM_HEADER_LEN + TM_MODEL_LEN) return 0;
    if (tio__ld16(d) != 2) return 0;
    uint64_t root = tio__ld32(d + 8);
    if (root < TM_HEADER_LEN || root + TM_MODEL_LEN > n) return 0;
    uint64_t vs = tio__ld32(d + root + 8);
    if (vs < TM_HEADER_LEN || vs + 8 > n || tio__ld32(d + vs) != 1) return 0;
    uint64_t sub = tio__ld32(d + vs + 4);
    if (sub < TM_HEADER_LEN || sub + TM_SUB_OLD > n) return 0;
    uint64_t nodes = tio__ld32(d + sub + 20), tensors = tio__ld32(d + sub + 24);
    if (nodes < TM_HEADER_LEN || nodes + 4 > n || tensors < TM_HEADER_LEN || tensors + 4 > n)
        return 0;
    return 60;
}

/* ------------------------------------------------------------------ read */

typedef struct tm_tinfo {
    uint32_t off;      /* the TM2_Tensor */
    int32_t layout, type, dcode;
    uint32_t qvec;     /* offset of the quant params vector, 0 = none */
    uint32_t qcount;
    int64_t bufsize;   /* a constant without data: its buffer size; else -1 */
    int64_t producer;  /* first node that outputs it, or -1 */
} tm_tinfo;

typedef struct tm_reader {
    tio_read_ctx *ctx;
    const uint8_t *d;
    size_t size;
    int old;           /* the old C++ layout and operator table */
    int32_t graph_layout;
    uint32_t op_ver;   /* the op_ver of node 0: other values become attributes */
    uint64_t objects;
    uint64_t budget;   /* min(max_objects, 16 per input byte + 4096) */
    tio_budget mem;    /* the heap the decode takes, estimated (graph/budget.h) */
    tio_graph *g;
    tm_tinfo *t;
    size_t nt;
    size_t nconst_zero;
} tm_reader;

/* Counts decoded objects (nodes, tensors, dims, quant params, attribute
 * values). Vectors may be shared between structs, so the total is bounded
 * both by max_objects and by the input's size: memory stays proportional to
 * the input. */
static int tm_count(tm_reader *r, uint64_t n, int64_t off, tio_error *err) {
    return tio__objects_take(&r->objects, n, r->budget, TM_FMT, off,
                             "nodes, tensors, dims, quant params, attribute values",
                             "and at most 16 per byte of input", err);
}

/* Charges heap the decode is about to take. Structs, vectors and strings
 * may be shared, and each reference is copied (see graph/budget.h). */
static int tm_mem(tm_reader *r, uint64_t bytes, int64_t off, tio_error *err) {
    return tio__budget_take(&r->mem, bytes, off, err);
}

/* A struct of `len` bytes at `off`, which must be set and inside the file. */
static int tm_struct(tm_reader *r, uint32_t off, uint32_t len, const char *what, int64_t ref,
                     const uint8_t **p, tio_error *err) {
    if (off == 0)
        return tio__err(err, TIO_E_CORRUPT, TM_FMT, ref, "%s: the offset is 0 (not set)", what);
    if ((uint64_t)off + len > r->size)
        return tio__err(err, TIO_E_BOUNDS, TM_FMT, ref,
                        "%s at offset %u (%u bytes) extends past the end of the file (%zu "
                        "bytes)",
                        what, off, len, r->size);
    *p = r->d + off;
    return TIO_OK;
}

/* A vector (u32 v_num, then v_num elements of `esz` bytes) at `off`; the
 * count is checked against the bytes left before anything else. */
static int tm_vector(tm_reader *r, uint32_t off, uint32_t esz, const char *what, int64_t ref,
                     uint32_t *count, const uint8_t **elems, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tm_struct(r, off, 4, what, ref, &p, err);
    if (rc) return rc;
    uint32_t n = tio__ld32(p);
    uint64_t left = r->size - (uint64_t)off - 4;
    if ((uint64_t)n * esz > left)
        return tio__err(err, TIO_E_BOUNDS, TM_FMT, off,
                        "%s: a vector of %u entries (%llu bytes) extends past the end of the "
                        "file (%llu bytes left)",
                        what, n, (unsigned long long)n * esz, (unsigned long long)left);
    *count = n;
    *elems = p + 4;
    return TIO_OK;
}

/* A TM2_String as a new C string (*s NULL when off is 0). The stored size
 * counts the terminating NUL; a string without one is taken whole. The
 * graph's copy of it is charged to the memory budget. */
static int tm_string(tm_reader *r, uint32_t off, const char *what, int64_t ref, char **s,
                     tio_error *err) {
    *s = NULL;
    if (off == 0) return TIO_OK;
    const uint8_t *p = NULL;
    int rc = tm_struct(r, off, TM_STRING_LEN, what, ref, &p, err);
    if (rc) return rc;
    uint32_t n = tio__ld32(p), data = tio__ld32(p + 4);
    if (n > r->ctx->limits.max_name_bytes)
        return tio__err(err, TIO_E_LIMIT, TM_FMT, off,
                        "%s: string of %u bytes exceeds the limit of %u", what, n,
                        r->ctx->limits.max_name_bytes);
    if (n && data == 0)
        return tio__err(err, TIO_E_CORRUPT, TM_FMT, off,
                        "%s: a string of %u bytes whose data offset is 0 (not set)", what, n);
    if (n && (uint64_t)data + n > r->size)
        return tio__err(err, TIO_E_BOUNDS, TM_FMT, off,
                        "%s: string data at offset %u (%u bytes) extends past the end of the "
                        "file (%zu bytes)",
                        what, data, n, r->size);
    const uint8_t *sp = n ? r->d + data : (const uint8_t *)"";
    size_t len = n;
    if (len && sp[len - 1] == 0) len--;
    const uint8_t *nul = memchr(sp, 0, len);
    if (nul) {
        rc = tio__warn(r->ctx, TM_FMT, (int64_t)data, err,
                       "%s: the string has a NUL byte at position %zu of %u; Tengine reads it "
                       "as a C string, so the rest is ignored",
                       what, (size_t)(nul - sp), n);
        if (rc) return rc;
        len = (size_t)(nul - sp);
    }
    rc = tm_mem(r, tio__cost_str(len), off, err);
    if (rc) return rc;
    *s = malloc(len + 1);
    if (!*s) return tio__nomem(err, TM_FMT);
    memcpy(*s, sp, len);
    (*s)[len] = 0;
    return TIO_OK;
}

static int tm_prop(tio_container *c, const char *key, const char *fmt, ...) TIO_PRINTF(3, 4);
static int tm_prop(tio_container *c, const char *key, const char *fmt, ...) {
    char buf[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tio__kv_set(&c->props, key, buf, NULL);
}

static int tm_meta(tio_graph *g, const char *key, const char *fmt, ...) TIO_PRINTF(3, 4);
static int tm_meta(tio_graph *g, const char *key, const char *fmt, ...) {
    char buf[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tio_graph_meta_set(g, key, buf, NULL);
}

static void tm_lbl(char *buf, size_t cap, const char *kind, size_t i, const char *name) {
    if (name)
        snprintf(buf, cap, "%s %zu ('%.48s%s')", kind, i, name, strlen(name) > 48 ? "..." : "");
    else
        snprintf(buf, cap, "%s %zu", kind, i);
}

static float tm_f32(const uint8_t *p) {
    uint32_t u = tio__ld32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* One tensor: its value in the graph, and for a constant with data a
 * tensor of the container. */
static int tm_tensor(tm_reader *r, size_t i, uint32_t off, int64_t slot, const uint8_t *buffers,
                     uint32_t vbufs, uint32_t nbuf, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tm_tinfo *ti = &r->t[i];
    const uint8_t *p = NULL;
    char lbl[96];
    tm_lbl(lbl, sizeof lbl, "tensor", i, NULL);
    int rc = tm_struct(r, off, TM_TENSOR_LEN, lbl, slot, &p, err);
    if (rc) return rc;
    ti->off = off;
    uint32_t tid = tio__ld32(p), bid = tio__ld32(p + 4), vd = tio__ld32(p + 8),
             sn = tio__ld32(p + 12), vq = tio__ld32(p + 16);
    ti->layout = (int32_t)tio__ld32(p + 20);
    ti->type = (int32_t)tio__ld32(p + 24);
    ti->dcode = (int32_t)tio__ld32(p + 28);
    ti->bufsize = -1;
    char *name = NULL;
    rc = tm_string(r, sn, lbl, off, &name, err);
    if (rc) return rc;
    tm_lbl(lbl, sizeof lbl, "tensor", i, name);
    tio_dtype dt = tm_dtype(ti->dcode);
    int64_t dims[TM_MAX_DIMS];
    tio_dim vdims[TM_MAX_DIMS];
    int64_t rank = -1;
    tio_value_info vi;
    memset(&vi, 0, sizeof vi);
    vi.name = name;
    vi.tensor = -1;
    if (dt == TIO_DTYPE_INVALID) {
        rc = tio__err(err, TIO_E_DTYPE, TM_FMT, (int64_t)off + 28,
                      "%s: data_type %d is not a tmfile data type (expected 0..5: FP32, FP16, "
                      "INT8, UINT8, INT32, INT16)",
                      lbl, ti->dcode);
        goto out;
    }
    if (tid != i) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)off, err,
                       "%s: tensor_id is %u, not its index %zu (Tengine ignores it; a write "
                       "numbers tensors by position)",
                       lbl, tid, i);
        if (rc) goto out;
    }
    if (vd) {
        uint32_t n;
        const uint8_t *e = NULL;
        rc = tm_vector(r, vd, 4, lbl, (int64_t)off + 8, &n, &e, err);
        if (rc) goto out;
        uint32_t maxr = ctx->limits.max_rank < TM_MAX_DIMS ? ctx->limits.max_rank : TM_MAX_DIMS;
        if (n > maxr) {
            rc = tio__err(err, TIO_E_LIMIT, TM_FMT, (int64_t)vd,
                          "%s: %u dims exceed the limit of %u (Tengine's tensors hold at most "
                          "%u dims)",
                          lbl, n, maxr, TM_MAX_DIMS);
            goto out;
        }
        rc = tm_count(r, n, vd, err);
        if (rc) goto out;
        for (uint32_t k = 0; k < n; k++) {
            int32_t v = (int32_t)tio__ld32(e + 4u * k);
            if (v < -1 || (v < 0 && ti->type == TM_T_CONST)) {
                rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)vd + 4 + 4 * k,
                              "%s: dim %u is %d (expected a size >= 0%s)", lbl, k, v,
                              ti->type == TM_T_CONST ? "" : ", or -1 for unknown");
                goto out;
            }
            dims[k] = v;
            vdims[k].value = v;
            vdims[k].name = NULL;
        }
        rank = n;
    }
    if (vq) {
        uint32_t n;
        const uint8_t *e = NULL;
        rc = tm_vector(r, vq, 4, lbl, (int64_t)off + 16, &n, &e, err);
        if (rc) goto out;
        rc = tm_count(r, n, vq, err);
        if (rc) goto out;
        for (uint32_t k = 0; k < n; k++) {
            const uint8_t *q = NULL;
            char what[128];
            snprintf(what, sizeof what, "%s: quant param %u", lbl, k);
            rc = tm_struct(r, tio__ld32(e + 4u * k), TM_QUANT_LEN, what, (int64_t)vq + 4 + 4 * k,
                           &q, err);
            if (rc) goto out;
        }
        ti->qvec = vq;
        ti->qcount = n;
    }
    if (ti->type == TM_T_CONST) {
        if (bid >= nbuf) {
            rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 4,
                          "%s: a constant with buffer_id %u, but the file has %u buffers", lbl,
                          bid, nbuf);
            goto out;
        }
        const uint8_t *b = NULL;
        char what[128];
        snprintf(what, sizeof what, "%s: buffer %u", lbl, bid);
        uint32_t boff = tio__ld32(buffers + 4u * bid);
        rc = tm_struct(r, boff, TM_BUFFER_LEN, what, (int64_t)vbufs + 4 + 4 * (int64_t)bid, &b,
                       err);
        if (rc) goto out;
        uint32_t bsize = tio__ld32(b), bdata = tio__ld32(b + 4);
        size_t nbytes = 0;
        uint64_t numel = 0;
        size_t rk = rank < 0 ? 0 : (size_t)rank;
        rc = tio__shape_size(dims, rk, tio_dtype_size(dt), &numel, &nbytes, TM_FMT, (int64_t)off,
                             err);
        if (rc) goto out;
        if (bdata == 0) {
            /* TM_FOR_BENCHMARK files: Tengine allocates zeros. Nothing is
             * materialised here: the value has no container tensor. */
            r->nconst_zero++;
            if ((uint64_t)bsize != nbytes) ti->bufsize = bsize;
            else ti->bufsize = -2;
            vi.dtype = dt;
            vi.rank = rank < 0 ? 0 : rank;
            vi.dims = vdims;
        } else {
            if (bsize < nbytes) {
                rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)boff,
                              "%s: buffer %u holds %u bytes, but %llu %s elements need %zu",
                              lbl, bid, bsize, (unsigned long long)numel, tio_dtype_name(dt),
                              nbytes);
                goto out;
            }
            if ((uint64_t)bdata + bsize > r->size) {
                rc = tio__err(err, TIO_E_BOUNDS, TM_FMT, (int64_t)boff + 4,
                              "%s: buffer %u data at offset %u (%u bytes) extends past the end "
                              "of the file (%zu bytes)",
                              lbl, bid, bdata, bsize, r->size);
                goto out;
            }
            if (bsize > nbytes) {
                rc = tio__warn(ctx, TM_FMT, (int64_t)boff, err,
                               "%s: buffer %u holds %u bytes, %zu more than the %zu its dims "
                               "need; the extra bytes are not kept",
                               lbl, bid, bsize, (size_t)bsize - nbytes, nbytes);
                if (rc) goto out;
            }
            if (tio_dtype_size(dt) > 1 && bdata % tio_dtype_size(dt)) {
                rc = tio__warn(ctx, TM_FMT, (int64_t)bdata, err,
                               "%s: constant data at offset %u is not aligned to its %zu-byte "
                               "elements (Tengine uses it in place)",
                               lbl, bdata, tio_dtype_size(dt));
                if (rc) goto out;
            }
            if ((uint64_t)ctx->c->count >= ctx->limits.max_tensors) {
                rc = tio__err(err, TIO_E_LIMIT, TM_FMT, (int64_t)off,
                              "%s: more constants than the limit of %llu tensors", lbl,
                              (unsigned long long)ctx->limits.max_tensors);
                goto out;
            }
            rc = tm_mem(r, tio__cost_tensor(name ? strlen(name) : 0, rk), (int64_t)off, err);
            if (rc) goto out;
            tio_tensor_desc desc;
            memset(&desc, 0, sizeof desc);
            desc.name = name;
            desc.dtype = dt;
            desc.rank = rk;
            desc.shape = dims;
            desc.layout = TIO_LAYOUT_DENSE;
            desc.data = r->d + bdata;
            desc.nbytes = nbytes;
            rc = tio__container_add_view(ctx->c, &desc, (int64_t)bdata, TM_FMT, err);
            if (rc) goto out;
            vi.tensor = (int64_t)ctx->c->count - 1;
        }
    } else {
        vi.dtype = dt;
        vi.rank = rank;
        vi.dims = rank > 0 ? vdims : NULL;
    }
    size_t idx;
    rc = tm_mem(r, tio__cost_dims(rank > 0 ? (uint64_t)rank : 0), (int64_t)off, err);
    if (!rc) rc = tio_graph_add_value(r->g, &vi, &idx, err);
out:
    free(name);
    return rc;
}

/* Decoded param fields (one per struct field). */
typedef struct tm_pv {
    bool present;
    int64_t i;
    double f;
    int64_t *ints;
    double *floats;
    size_t count;
    char *s;
} tm_pv;

static void tm_pv_free(tm_pv *pv, unsigned n) {
    for (unsigned k = 0; k < n; k++) {
        free(pv[k].ints);
        free(pv[k].floats);
        free(pv[k].s);
    }
}

/* Reads a param struct (and the vectors and strings it names). */
static int tm_read_param(tm_reader *r, const tm_pdef *pd, unsigned nf, uint32_t poff,
                         int64_t ref, tm_pv *pv, const char *lbl, tio_error *err) {
    unsigned pos[32];
    unsigned size = tm_layout(pd, nf, pos);
    const uint8_t *p = NULL;
    char what[160];
    snprintf(what, sizeof what, "%s: %s", lbl, pd->name);
    int rc = tm_struct(r, poff, size, what, ref, &p, err);
    if (rc) return rc;
    rc = tm_count(r, nf, poff, err);
    if (rc) return rc;
    for (unsigned k = 0; k < nf; k++) {
        const tm_field *f = &pd->f[k];
        const uint8_t *q = p + pos[k];
        tm_pv *v = &pv[k];
        switch (f->kind) {
        case TF_I32: v->i = (int32_t)tio__ld32(q); v->present = true; break;
        case TF_U32: v->i = tio__ld32(q); v->present = true; break;
        case TF_BOOL: v->i = q[0]; v->present = true; break;
        case TF_F32: v->f = tm_f32(q); v->present = true; break;
        case TF_STR: {
            uint32_t so = tio__ld32(q);
            if (!so) break;
            snprintf(what, sizeof what, "%s: %s.%s", lbl, pd->name, f->name);
            rc = tm_string(r, so, what, (int64_t)poff + pos[k], &v->s, err);
            if (rc) return rc;
            v->present = true;
            break;
        }
        default: {
            uint32_t vo = tio__ld32(q), n;
            if (!vo) break;
            const uint8_t *e = NULL;
            uint32_t esz = f->kind == TF_VANCHORS ? 16u : 4u;
            snprintf(what, sizeof what, "%s: %s.%s", lbl, pd->name, f->name);
            rc = tm_vector(r, vo, esz, what, (int64_t)poff + pos[k], &n, &e, err);
            if (rc) return rc;
            size_t cnt = (size_t)n * (esz / 4);
            /* the values here (the graph's copy is charged with the attribute) */
            rc = tm_count(r, cnt, vo, err);
            if (!rc) rc = tm_mem(r, tio__cost_i64s(cnt), vo, err);
            if (rc) return rc;
            if (f->kind == TF_VDIMS) {
                v->ints = malloc((cnt ? cnt : 1) * sizeof *v->ints);
                if (!v->ints) return tio__nomem(err, TM_FMT);
                for (size_t m = 0; m < cnt; m++) v->ints[m] = (int32_t)tio__ld32(e + 4 * m);
            } else {
                v->floats = malloc((cnt ? cnt : 1) * sizeof *v->floats);
                if (!v->floats) return tio__nomem(err, TM_FMT);
                for (size_t m = 0; m < cnt; m++) v->floats[m] = tm_f32(e + 4 * m);
            }
            v->count = cnt;
            v->present = true;
            break;
        }
        }
    }
    return TIO_OK;
}

/* Attributes a reader adds, charged to the memory budget. */
static int tm_add_attr(tm_reader *r, size_t ni, const tio_attr *a, tio_error *err) {
    uint64_t payload = a->type == TIO_ATTR_INTS || a->type == TIO_ATTR_FLOATS
                           ? tio__cost_i64s(a->count)
                           : 0;
    int rc = tm_mem(r,
                    tio__cost_attr(strlen(a->name), a->label ? strlen(a->label) : 0) + payload,
                    -1, err);
    return rc ? rc : tio_graph_add_attr(r->g, ni, a, err);
}
static int tm_add_int(tm_reader *r, size_t ni, const char *name, int64_t v, const char *label,
                      tio_error *err) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_INT;
    a.i = v;
    a.label = label;
    return tm_add_attr(r, ni, &a, err);
}
static int tm_add_ints(tm_reader *r, size_t ni, const char *name, const int64_t *v, size_t n,
                       tio_error *err) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_INTS;
    a.ints = v;
    a.count = n;
    return tm_add_attr(r, ni, &a, err);
}
static int tm_add_floats(tm_reader *r, size_t ni, const char *name, const double *v, size_t n,
                         tio_error *err) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_FLOATS;
    a.floats = v;
    a.count = n;
    return tm_add_attr(r, ni, &a, err);
}

/* The default TM2_Tensor.type of an output of operator `idx`. */
static int32_t tm_default_type(int idx) {
    return idx == OP_CONST ? TM_T_CONST : idx == OP_INPUT ? TM_T_INPUT : TM_T_VAR;
}

/* The per-output tensor facts that differ from the defaults, as tm2_*
 * attributes of the node that produces them. */
static int tm_output_attrs(tm_reader *r, size_t ni, int idx, const int64_t *outs, size_t n,
                           tio_error *err) {
    bool lay = false, typ = false, buf = false;
    uint64_t nq = 0;
    for (size_t k = 0; k < n; k++) {
        const tm_tinfo *ti = &r->t[outs[k]];
        if (ti->layout != r->graph_layout) lay = true;
        if (ti->type != tm_default_type(idx)) typ = true;
        if (ti->bufsize >= 0) buf = true;
        nq += ti->qcount;
    }
    /* the arrays here (the attributes are charged as they are added) */
    int rc = tm_count(r, nq, -1, err);
    if (!rc) rc = tm_mem(r, tio__cost_i64s(n) + 3 * tio__cost_i64s(nq), -1, err);
    if (rc) return rc;
    int64_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return tio__nomem(err, TM_FMT);
    if (lay) {
        for (size_t k = 0; k < n; k++) tmp[k] = r->t[outs[k]].layout;
        rc = tm_add_ints(r, ni, "tm2_layout", tmp, n, err);
    }
    if (!rc && typ) {
        for (size_t k = 0; k < n; k++) tmp[k] = r->t[outs[k]].type;
        rc = tm_add_ints(r, ni, "tm2_type", tmp, n, err);
    }
    if (!rc && buf) {
        for (size_t k = 0; k < n; k++)
            tmp[k] = r->t[outs[k]].bufsize >= 0 ? r->t[outs[k]].bufsize : -1;
        rc = tm_add_ints(r, ni, "tm2_buffer_size", tmp, n, err);
    }
    if (!rc && nq) {
        int64_t *zp = malloc((size_t)nq * sizeof *zp), *wd = malloc((size_t)nq * sizeof *wd);
        double *sc = malloc((size_t)nq * sizeof *sc);
        bool anyw = false;
        if (!zp || !wd || !sc) rc = tio__nomem(err, TM_FMT);
        size_t m = 0;
        for (size_t k = 0; !rc && k < n; k++) {
            const tm_tinfo *ti = &r->t[outs[k]];
            tmp[k] = ti->qcount;
            /* bounds were checked when the tensor was read */
            const uint8_t *e = r->d + ti->qvec + 4;
            for (uint32_t j = 0; j < ti->qcount; j++, m++) {
                const uint8_t *q = r->d + tio__ld32(e + 4u * j);
                zp[m] = (int32_t)tio__ld32(q);
                sc[m] = tm_f32(q + 4);
                wd[m] = (int32_t)tio__ld32(q + 8);
                if (wd[m]) anyw = true;
            }
        }
        if (!rc) rc = tm_add_ints(r, ni, "tm2_quant_count", tmp, n, err);
        if (!rc) rc = tm_add_floats(r, ni, "tm2_quant_scale", sc, (size_t)nq, err);
        if (!rc) rc = tm_add_ints(r, ni, "tm2_quant_zero_point", zp, (size_t)nq, err);
        /* TM2_QuantParam.width: set by the old C++ writer, never by lite's. */
        if (!rc && r->old && anyw)
            rc = tm_add_ints(r, ni, "tm2_quant_width", wd, (size_t)nq, err);
        free(zp);
        free(wd);
        free(sc);
    }
    free(tmp);
    return rc;
}

/* A node's tensor indices (input or output vector). */
static int tm_indices(tm_reader *r, uint32_t off, const char *lbl, const char *what, int64_t ref,
                      int64_t **out, size_t *n, tio_error *err) {
    *out = NULL;
    *n = 0;
    if (!off) return TIO_OK;
    uint32_t cnt;
    const uint8_t *e = NULL;
    char w[160];
    snprintf(w, sizeof w, "%s: %s", lbl, what);
    int rc = tm_vector(r, off, 4, w, ref, &cnt, &e, err);
    /* the ids here, and the graph's copy */
    if (!rc) rc = tm_count(r, cnt, off, err);
    if (!rc) rc = tm_mem(r, 2 * tio__cost_i64s(cnt), (int64_t)off, err);
    if (rc) return rc;
    int64_t *ids = malloc((cnt ? cnt : 1) * sizeof *ids);
    if (!ids) return tio__nomem(err, TM_FMT);
    for (uint32_t k = 0; k < cnt; k++) {
        uint32_t t = tio__ld32(e + 4u * k);
        if (t >= r->nt) {
            free(ids);
            return tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 4 + 4 * k,
                            "%s: %s %u is tensor %u, but the file has %zu tensors", lbl, what, k,
                            t, r->nt);
        }
        ids[k] = t;
    }
    *out = ids;
    *n = cnt;
    return TIO_OK;
}

/* The op name a node gets: ONNX's where one exists. */
static const char *tm_onnx_name(int idx, const tm_pv *pv, unsigned nf) {
    if (idx == OP_POOL && nf >= 6) {
        bool global = pv[5].i != 0;
        if (pv[0].i == 0) return global ? "GlobalMaxPool" : "MaxPool";
        if (pv[0].i == 1) return global ? "GlobalAveragePool" : "AveragePool";
        return NULL;
    }
    if (idx == OP_RELU && nf >= 1) return pv[0].f == 0 ? "Relu" : "LeakyRelu";
    if (idx == OP_ELTWISE && nf >= 1) {
        int64_t t = pv[0].i;
        return t >= 0 && t < (int64_t)(sizeof eltwise_onnx / sizeof eltwise_onnx[0])
                   ? eltwise_onnx[t]
                   : NULL;
    }
    return tm_ops[idx].onnx;
}

static int tm_node(tm_reader *r, size_t i, uint32_t off, int64_t slot, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tio_graph *g = r->g;
    const uint8_t *p = NULL;
    char lbl[128];
    tm_lbl(lbl, sizeof lbl, "node", i, NULL);
    int rc = tm_struct(r, off, TM_NODE_LEN, lbl, slot, &p, err);
    if (rc) return rc;
    uint32_t nid = tio__ld32(p), vin = tio__ld32(p + 4), vout = tio__ld32(p + 8),
             top = tio__ld32(p + 12), sn = tio__ld32(p + 16), vattr = tio__ld32(p + 20);
    uint8_t dyn = p[24];
    char *name = NULL;
    int64_t *ins = NULL, *outs = NULL;
    size_t nin = 0, nout = 0;
    tm_pv pv[32];
    unsigned nf = 0;
    memset(pv, 0, sizeof pv);
    int64_t *raw = NULL;
    size_t nraw = 0;
    char opq[200];
    opq[0] = 0;
    rc = tm_string(r, sn, lbl, off + 16, &name, err);
    if (rc) goto out;
    tm_lbl(lbl, sizeof lbl, "node", i, name);
    rc = tm_indices(r, vin, lbl, "input", (int64_t)off + 4, &ins, &nin, err);
    if (!rc) rc = tm_indices(r, vout, lbl, "output", (int64_t)off + 8, &outs, &nout, err);
    if (rc) goto out;
    if (nout == 0) {
        rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 8,
                      "%s: the node has no outputs (Tengine refuses such a model)", lbl);
        goto out;
    }
    const uint8_t *op = NULL;
    char what[160];
    snprintf(what, sizeof what, "%s: TM2_Operator", lbl);
    rc = tm_struct(r, top, TM_OP_LEN, what, (int64_t)off + 12, &op, err);
    if (rc) goto out;
    uint32_t op_ver = tio__ld32(op), code = tio__ld32(op + 4), poff = tio__ld32(op + 8);
    if (i == 0) r->op_ver = op_ver;
    int idx = tm_lite_index(r->old, code);
    const tm_pdef *pd = idx >= 0 ? tm_param_of(idx, r->old, op_ver, &nf) : NULL;
    if (pd && poff) {
        rc = tm_read_param(r, pd, nf, poff, (int64_t)top + 8, pv, lbl, err);
        if (rc) goto out;
    } else if (pd) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)top + 8, err,
                       "%s: %s has no param (offset_t_param is 0; Tengine would read the file "
                       "header as its %s); a write gives it a zeroed one",
                       lbl, tm_ops[idx].name, pd->name);
        if (rc) goto out;
    } else if (poff) {
        /* A param tensio has no struct for: kept as raw 32-bit words. Its size
         * comes from the official writer's layout, which writes a param
         * immediately before its TM2_Operator. */
        if (poff >= top || top - poff > TM_RAW_PARAM_MAX || (top - poff) % 4) {
            snprintf(opq, sizeof opq,
                     "the param of operator type %u at offset %u is not immediately before its "
                     "TM2_Operator, so its size is unknown",
                     code, poff);
            rc = tio__warn(ctx, TM_FMT, (int64_t)top + 8, err, "%s: %s; it cannot be re-encoded",
                           lbl, opq);
            if (rc) goto out;
        } else {
            nraw = (top - poff) / 4;
            raw = malloc(nraw * sizeof *raw);
            if (!raw) {
                rc = tio__nomem(err, TM_FMT);
                goto out;
            }
            for (size_t k = 0; k < nraw; k++) raw[k] = tio__ld32(r->d + poff + 4 * k);
        }
    }
    tio_node_info ni;
    memset(&ni, 0, sizeof ni);
    char opbuf[32];
    ni.name = name;
    ni.native_id = code;
    if (idx >= 0) {
        ni.native_op = tm_ops[idx].name;
        ni.op = tm_onnx_name(idx, pv, nf);
        if (!ni.op) ni.op = ni.native_op;
    } else {
        snprintf(opbuf, sizeof opbuf, "OpType%u", code);
        ni.op = opbuf;
    }
    ni.inputs = ins;
    ni.input_count = nin;
    ni.outputs = outs;
    ni.output_count = nout;
    size_t gi;
    /* the node's op name and the raw words here (its slot was reserved;
     * attributes are charged as they are added) */
    rc = tm_mem(r, tio__cost_str(strlen(ni.op)) + tio__cost_i64s(nraw), (int64_t)off, err);
    if (!rc) rc = tio_graph_add_node(g, &ni, &gi, err);
    if (rc) goto out;
    if (idx < 0) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)top + 4, err,
                       "%s: operator type %u is not in the %s operator table (Tengine refuses "
                       "the model); it is kept by number",
                       lbl, code, r->old ? "old C++ (0..90)" : "Tengine-lite (0..107)");
        if (rc) goto out;
    }
    if (opq[0]) {
        rc = tm_mem(r, tio__cost_str(strlen(opq)), (int64_t)off, err);
        if (!rc) rc = tio__graph_set_opaque(g, gi, opq, err);
        if (rc) goto out;
    }
    if (nid != i) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)off, err,
                       "%s: node_id is %u, not its index %zu (a write numbers nodes by "
                       "position)",
                       lbl, nid, i);
        if (rc) goto out;
    }
    /* params -> attributes named after the struct fields */
    rc = tm_count(r, nf + 8, off, err);
    for (unsigned k = 0; !rc && k < nf; k++) {
        const tm_field *f = &pd->f[k];
        const tm_pv *v = &pv[k];
        if (!v->present) continue;
        /* Eltwise caffe_flavor/shift/power/scale: lite's writer never sets
         * them (uninitialised bytes); they mean something only for POWER. */
        if (idx == OP_ELTWISE && !r->old && k > 0 && pv[0].i != ELT_POWER) continue;
        tio_attr a;
        memset(&a, 0, sizeof a);
        a.name = f->name;
        switch (f->kind) {
        case TF_I32:
        case TF_U32:
        case TF_BOOL:
            a.type = TIO_ATTR_INT;
            a.i = v->i;
            a.label = tm_label(idx, f->name, v->i);
            break;
        case TF_F32: a.type = TIO_ATTR_FLOAT; a.f = v->f; break;
        case TF_STR: a.type = TIO_ATTR_STRING; a.s = v->s; break;
        case TF_VDIMS: a.type = TIO_ATTR_INTS; a.ints = v->ints; a.count = v->count; break;
        default: a.type = TIO_ATTR_FLOATS; a.floats = v->floats; a.count = v->count; break;
        }
        rc = tm_add_attr(r, gi, &a, err);
    }
    if (!rc && raw) rc = tm_add_ints(r, gi, "tm2_param", raw, nraw, err);
    if (!rc && op_ver != r->op_ver) rc = tm_add_int(r, gi, "tm2_op_ver", op_ver, NULL, err);
    if (!rc && dyn) rc = tm_add_int(r, gi, "tm2_dynamic_shape", dyn, NULL, err);
    if (!rc) rc = tm_output_attrs(r, gi, idx, outs, nout, err);
    if (rc) goto out;
    for (size_t k = 0; k < nout; k++) {
        tm_tinfo *ti = &r->t[outs[k]];
        if (ti->producer < 0) {
            ti->producer = (int64_t)i;
        } else {
            rc = tio__warn(ctx, TM_FMT, (int64_t)off + 8, err,
                           "%s: tensor %lld is also an output of node %lld; a write refuses "
                           "a tensor with two producers",
                           lbl, (long long)outs[k], (long long)ti->producer);
            if (rc) goto out;
        }
    }
    if (vattr) {
        /* TM2_Attr custom attributes (old C++ only): not decoded. */
        char why[160];
        snprintf(why, sizeof why,
                 "the node has custom attributes (TM2_Attr vector at offset %u), which tensio "
                 "does not decode",
                 vattr);
        rc = tm_mem(r, tio__cost_str(strlen(why)), (int64_t)off, err);
        if (!rc) rc = tio__graph_set_opaque(g, gi, why, err);
        if (!rc) rc = tio__warn(ctx, TM_FMT, (int64_t)off + 20, err, "%s: %s", lbl, why);
    }
out:
    tm_pv_free(pv, nf);
    free(raw);
    free(name);
    free(ins);
    free(outs);
    return rc;
}

/* Graph inputs or outputs from a vector of node indices: the nodes' output
 * tensors, in order. */
static int tm_io(tm_reader *r, uint32_t off, const char *what, int64_t ref, bool inputs,
                 tio_error *err) {
    tio_graph *g = r->g;
    if (!off) return TIO_OK;
    uint32_t n;
    const uint8_t *e = NULL;
    int rc = tm_vector(r, off, 4, what, ref, &n, &e, err);
    if (!rc) rc = tm_count(r, n, off, err);
    if (rc) return rc;
    size_t total = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t ni = tio__ld32(e + 4u * k);
        if (ni >= g->node_count)
            return tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 4 + 4 * k,
                            "%s %u is node %u, but the graph has %zu nodes", what, k, ni,
                            g->node_count);
        total += g->nodes[ni].output_count;
        rc = tm_count(r, g->nodes[ni].output_count, off, err);
        if (rc) return rc;
    }
    rc = tm_mem(r, 2 * tio__cost_i64s(total), (int64_t)off, err); /* here and the graph's */
    if (rc) return rc;
    int64_t *vals = malloc((total ? total : 1) * sizeof *vals);
    if (!vals) return tio__nomem(err, TM_FMT);
    size_t m = 0;
    for (uint32_t k = 0; k < n; k++) {
        const tio_gnode *nd = &g->nodes[tio__ld32(e + 4u * k)];
        for (size_t j = 0; j < nd->output_count; j++) vals[m++] = nd->outputs[j];
    }
    rc = inputs ? tio_graph_set_inputs(g, vals, total, err)
                : tio_graph_set_outputs(g, vals, total, err);
    free(vals);
    return rc;
}

/* Puts the container's tensors in the order a write stores them (and so a
 * read of the written file gives): the constants no node outputs first, in
 * value order, then those that nodes output, in node order. Only files
 * whose constants are outputs of ordinary nodes (not Const) differ from
 * tensor order; for them, read → write → read keeps the order. */
static int tm_writer_order(tio_container *c, tio_graph *g, tio_error *err) {
    size_t n = c->count;
    if (n < 2) return TIO_OK;
    int64_t *val = malloc(n * sizeof *val);          /* container tensor -> value */
    uint8_t *produced = calloc(g->value_count ? g->value_count : 1, 1);
    size_t *order = malloc(n * sizeof *order);
    tio_tensor **nt = malloc(n * sizeof *nt);
    uint8_t *taken = calloc(n, 1);
    int rc = TIO_OK;
    if (!val || !produced || !order || !nt || !taken) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t i = 0; i < n; i++) val[i] = -1;
    for (size_t v = 0; v < g->value_count; v++)
        if (g->values[v].tensor >= 0 && (size_t)g->values[v].tensor < n)
            val[g->values[v].tensor] = (int64_t)v;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++) {
            int64_t v = g->nodes[j].outputs[k];
            if (v >= 0 && (size_t)v < g->value_count) produced[v] = 1;
        }
    /* order[] must be a permutation whatever the file says: taken[] marks
     * the tensors placed */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (val[i] < 0 || !produced[val[i]]) {
            order[m++] = i;
            taken[i] = 1;
        }
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++) {
            int64_t v = g->nodes[j].outputs[k];
            if (v < 0 || (size_t)v >= g->value_count) continue;
            int64_t t = g->values[v].tensor;
            if (t < 0 || (size_t)t >= n || taken[t]) continue;
            order[m++] = (size_t)t;
            taken[t] = 1;
        }
    for (size_t i = 0; i < n; i++)
        if (!taken[i]) order[m++] = i;
    bool same = true;
    for (size_t i = 0; same && i < n; i++) same = order[i] == i;
    if (same) goto out;
    for (size_t i = 0; i < n; i++) nt[i] = c->tensors[order[i]];
    for (size_t i = 0; i < n; i++) {
        c->tensors[i] = nt[i];
        if (val[order[i]] >= 0) g->values[val[order[i]]].tensor = (int64_t)i;
    }
out:
    free(val);
    free(produced);
    free(order);
    free(nt);
    free(taken);
    return rc;
}

static int tm_read(tio_read_ctx *ctx, tio_error *err) {
    tm_reader r;
    memset(&r, 0, sizeof r);
    r.op_ver = 1;
    r.ctx = ctx;
    r.d = ctx->data;
    r.size = ctx->size;
    r.budget = (uint64_t)r.size * 16 + 4096;
    if (r.budget > ctx->limits.max_objects) r.budget = ctx->limits.max_objects;
    tio__budget_init(&r.mem, TM_FMT, r.size, &ctx->limits);
    const uint8_t *d = r.d;
    int rc;
    if (r.size < TM_HEADER_LEN)
        return tio__err(err, TIO_E_TRUNCATED, TM_FMT, 0,
                        "%zu bytes: too short for the 12-byte TM2_Header", r.size);
    uint16_t vmain = tio__ld16(d), vsub = tio__ld16(d + 2), vcomp = tio__ld16(d + 4);
    uint32_t root = tio__ld32(d + 8);
    if (vmain != 2)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, 0,
                        "ver_main is %u (expected 2: only tm2 files are supported)", vmain);
    const uint8_t *mp = NULL;
    rc = tm_struct(&r, root, TM_MODEL_LEN, "TM2_Model (offset_root)", 8, &mp, err);
    if (rc) return rc;
    int32_t orig = (int32_t)tio__ld32(mp), subf = (int32_t)tio__ld32(mp + 4);
    uint32_t vsubs = tio__ld32(mp + 8), smname = tio__ld32(mp + 12);
    uint32_t nsub;
    const uint8_t *se = NULL;
    rc = tm_vector(&r, vsubs, 4, "TM2_Model.offset_vo_subgraphs", (int64_t)root + 8, &nsub, &se,
                   err);
    if (rc) return rc;
    if (nsub == 0)
        return tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)vsubs, "the model has no subgraph");
    if (nsub > 1)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, (int64_t)vsubs,
                        "the model has %u subgraphs; tensio reads models with one (as Tengine's "
                        "writers produce)",
                        nsub);
    uint32_t soff = tio__ld32(se);
    const uint8_t *sp = NULL;
    rc = tm_struct(&r, soff, TM_SUB_OLD, "TM2_Subgraph", (int64_t)vsubs + 4, &sp, err);
    if (rc) return rc;
    /* Lite's 40-byte subgraph or the old 36-byte one: both writers put the
     * subgraphs vector right after the subgraph; otherwise a subgraph that
     * would run past the end, or a model name (lite writes none), means old. */
    const char *why;
    if ((uint64_t)soff + TM_SUB_LITE == vsubs) {
        r.old = 0;
        why = "the subgraphs vector follows 40 bytes after the subgraph";
    } else if ((uint64_t)soff + TM_SUB_OLD == vsubs) {
        r.old = 1;
        why = "the subgraphs vector follows 36 bytes after the subgraph";
    } else if ((uint64_t)soff + TM_SUB_LITE > r.size) {
        r.old = 1;
        why = "a 40-byte subgraph would extend past the end of the file";
    } else if (smname) {
        r.old = 1;
        why = "the model has a name";
    } else {
        r.old = 0;
        why = "default";
    }
    uint32_t sid = tio__ld32(sp);
    r.graph_layout = (int32_t)tio__ld32(sp + 4);
    int32_t mlayout = (int32_t)tio__ld32(sp + 8);
    uint32_t vin = tio__ld32(sp + 12), vout = tio__ld32(sp + 16), vnodes = tio__ld32(sp + 20),
             vtens = tio__ld32(sp + 24), vbufs = tio__ld32(sp + 28), ssname = tio__ld32(sp + 32);

    tio_container *c = ctx->c;
    const char *on = tm_orig_name(r.old, orig);
    rc = tm_prop(c, "ver_main", "%u", vmain);
    if (!rc) rc = tm_prop(c, "ver_sub", "%u", vsub);
    if (!rc) rc = tm_prop(c, "ver_compile", "%u", vcomp);
    if (!rc) rc = tm_prop(c, "offset_root", "%u", root);
    if (!rc)
        rc = tm_prop(c, "orig_format", "%d%s%s%s", orig, on ? " (" : "", on ? on : "",
                     on ? ")" : "");
    if (!rc) rc = tm_prop(c, "sub_format", "%d", subf);
    if (!rc) rc = tm_prop(c, "subgraph_offset", "%u", soff);
    if (!rc) rc = tm_prop(c, "subgraph_size", "%u", r.old ? TM_SUB_OLD : TM_SUB_LITE);
    if (!rc) rc = tm_prop(c, "variant", "%s", r.old ? "old-cpp" : "lite");
    if (!rc) rc = tm_prop(c, "variant_reason", "%s", why);
    if (!rc) rc = tm_prop(c, "graph_layout", "%d", r.graph_layout);
    if (!rc) rc = tm_prop(c, "model_layout", "%d", mlayout);
    if (rc) return tio__nomem(err, TM_FMT);

    tio_graph *g = NULL;
    rc = tio_container_new_graph(c, &g, err);
    if (!rc) rc = tio_graph_set_native_format(g, TM_FMT, err);
    if (rc) return rc;
    r.g = g;
    /* graph-level fields a write needs, as model metadata */
    const char *gl = tm_layout_name(r.graph_layout), *ml = tm_layout_name(mlayout);
    rc = tm_meta(g, "tmfile.variant", "%s", r.old ? "old-cpp" : "lite");
    if (!rc) rc = on ? tm_meta(g, "tmfile.orig_format", "%s", on)
                     : tm_meta(g, "tmfile.orig_format", "%d", orig);
    if (!rc) rc = gl ? tm_meta(g, "tmfile.graph_layout", "%s", gl)
                     : tm_meta(g, "tmfile.graph_layout", "%d", r.graph_layout);
    if (!rc) rc = ml ? tm_meta(g, "tmfile.model_layout", "%s", ml)
                     : tm_meta(g, "tmfile.model_layout", "%d", mlayout);
    if (!rc && subf) rc = tm_meta(g, "tmfile.sub_format", "%d", subf);
    if (!rc && sid) rc = tm_meta(g, "tmfile.subgraph_id", "%u", sid);
    if (rc) return tio__nomem(err, TM_FMT);
    char *s = NULL;
    rc = tm_string(&r, smname, "model name", (int64_t)root + 12, &s, err);
    if (!rc && s) rc = tio_graph_meta_set(g, "tmfile.model_name", s, err);
    free(s);
    if (!rc) rc = tm_string(&r, ssname, "subgraph name", (int64_t)soff + 32, &s, err);
    if (!rc && s) rc = tio_graph_meta_set(g, "tmfile.subgraph_name", s, err);
    free(s);
    if (rc) return rc;

    /* buffers, tensors, nodes */
    uint32_t nbuf = 0, nten, nnode;
    const uint8_t *be = NULL, *te = NULL, *ne = NULL;
    if (vbufs) {
        rc = tm_vector(&r, vbufs, 4, "TM2_Subgraph.offset_vo_buffers", (int64_t)soff + 28, &nbuf,
                       &be, err);
        if (rc) return rc;
    }
    rc = tm_vector(&r, vtens, 4, "TM2_Subgraph.offset_vo_tensors", (int64_t)soff + 24, &nten, &te,
                   err);
    if (!rc)
        rc = tm_vector(&r, vnodes, 4, "TM2_Subgraph.offset_vo_seq_nodes", (int64_t)soff + 20,
                       &nnode, &ne, err);
    if (!rc) rc = tm_count(&r, (uint64_t)nten + nnode, (int64_t)vtens, err);
    /* value and node slots (reserved here) and the per-tensor facts */
    if (!rc)
        rc = tm_mem(&r,
                    (uint64_t)nten * (tio__cost_value() + sizeof *r.t) +
                        (uint64_t)nnode * tio__cost_grown(sizeof(tio_gnode)),
                    (int64_t)vtens, err);
    if (rc) return rc;
    r.nt = nten;
    r.t = calloc(nten ? nten : 1, sizeof *r.t);
    if (!r.t) return tio__nomem(err, TM_FMT);
    rc = tio__graph_reserve(g, nten, nnode, err);
    for (size_t i = 0; !rc && i < nten; i++) r.t[i].producer = -1;
    for (size_t i = 0; !rc && i < nten; i++)
        rc = tm_tensor(&r, i, tio__ld32(te + 4 * i), (int64_t)vtens + 4 + 4 * (int64_t)i, be,
                       vbufs, nbuf, err);
    for (size_t i = 0; !rc && i < nnode; i++)
        rc = tm_node(&r, i, tio__ld32(ne + 4 * i), (int64_t)vnodes + 4 + 4 * (int64_t)i, err);
    if (!rc)
        rc = tm_io(&r, vin, "TM2_Subgraph input node", (int64_t)soff + 12, true, err);
    if (!rc)
        rc = tm_io(&r, vout, "TM2_Subgraph output node", (int64_t)soff + 16, false, err);
    /* findings about the whole model */
    size_t orphans = 0, first = 0;
    for (size_t i = 0; !rc && i < nten; i++)
        if (r.t[i].producer < 0 && orphans++ == 0) first = i;
    if (!rc && orphans) {
        const char *vn = g->values[first].name;
        rc = tio__warn(ctx, TM_FMT, (int64_t)r.t[first].off, err,
                       "%zu tensor%s no node outputs (the first: tensor %zu '%s'); the official "
                       "writer drops such tensors, tensio's writer gives a constant a Const node "
                       "and a graph input an InputOp node",
                       orphans, orphans == 1 ? " that" : "s that", first, vn ? vn : "");
    }
    if (!rc && r.nconst_zero)
        rc = tio__warn(ctx, TM_FMT, -1, err,
                       "%zu constant%s no data (buffer offset_data 0, as in TM_FOR_BENCHMARK "
                       "files): Tengine fills them with zeros; they are graph values without a "
                       "container tensor",
                       r.nconst_zero, r.nconst_zero == 1 ? " has" : "s have");
    /* the op_ver of node 0, when it is not the writer's (lite 1, old C++ 2) */
    if (!rc && nnode && r.op_ver != (r.old ? 2u : 1u))
        rc = tm_meta(g, "tmfile.op_ver", "%u", r.op_ver);
    if (!rc) rc = tm_prop(c, "nodes", "%u", nnode);
    if (!rc) rc = tm_prop(c, "tensors", "%u", nten);
    if (!rc) rc = tm_prop(c, "buffers", "%u", nbuf);
    if (!rc)
        rc = tm_mem(&r, 4 * tio__cost_i64s(c->count) + tio__cost_block(g->value_count), -1, err);
    if (!rc) rc = tm_writer_order(c, g, err);
    free(r.t);
    return rc;
}

/* ----------------------------------------------------------------- write */

typedef struct tw_pv {
    bool present;
    int64_t i;
    double f;
    const int64_t *ints;
    const double *floats;
    size_t count;
    const char *s;
} tw_pv;

#define TW_MAXF 32

typedef struct tw_node {
    const tio_gnode *gn;   /* NULL when synthesized */
    int64_t sval;          /* a synthesized node: its output value */
    const char *name;
    int idx;               /* lite operator index; -1: kept by number (code) */
    uint32_t code;         /* the code in the table written */
    uint32_t op_ver;
    uint8_t dyn;
    const tm_pdef *pd;
    unsigned nf;
    tw_pv *pv;             /* nf values (npv allocated), NULL without a param struct */
    unsigned npv;
    const int64_t *raw;    /* tm2_param words */
    size_t nraw;
    bool has_param;
    /* per-output tensor facts (tm2_* attributes), NULL = the defaults */
    const int64_t *layouts, *types, *bufsizes, *qcount, *qzp, *qwidth;
    const double *qscale;
    int64_t *own;          /* converted values this node owns */
    int64_t *ins, *outs;   /* tensor indices */
    size_t nin, nout;
} tw_node;

typedef struct tw_tensor {
    int64_t value;
    const char *name;
    int64_t rank;          /* -1: no dims vector */
    int32_t dims[TM_MAX_DIMS];
    int32_t dcode, layout, type;
    size_t nq;
    const double *qscale;
    const int64_t *qzp, *qwidth;
    int64_t ct;            /* container tensor, or -1 */
    uint32_t bufsize;
} tw_tensor;

typedef struct tw {
    tio_write_plan *plan;
    const tio_container *c;
    const tio_graph *g;
    int old;
    bool native;
    int32_t orig, subf, glayout, mlayout;
    uint32_t sid, op_ver;
    const char *mname, *sname;
    tw_node *nodes;
    size_t nn;
    tw_tensor *t;
    size_t nt;
    int64_t *vmap;         /* value -> tensor index, or -1 */
    uint32_t *innodes, *outnodes;
    size_t nin, nout;
    uint32_t *offs;        /* scratch: node/tensor/buffer offsets */
    bool nomem;            /* an allocation in tw_use_op failed */
} tw;

static void tw_free(tw *w) {
    for (size_t i = 0; w->nodes && i < w->nn; i++) {
        free(w->nodes[i].own);
        free(w->nodes[i].pv);
        free(w->nodes[i].ins);
        free(w->nodes[i].outs);
    }
    free(w->nodes);
    free(w->t);
    free(w->vmap);
    free(w->innodes);
    free(w->outnodes);
    free(w->offs);
}

/* What a message names: a node of the file, a node of the graph or a value.
 * Formatted on first use, since only a failing check needs it (formatting one
 * for every node and value was a measurable part of writing a model with many
 * constants). */
typedef struct tw_lb {
    const tw_node *n;     /* "node 3 ('conv1', Conv)": a node of the file, j its index */
    const tio_gnode *gn;  /* else a node of the graph, j its index */
    const char *vname;    /* else value j (vname may be NULL) */
    size_t j;
    bool done;
    char buf[160];
} tw_lb;

static const char *tw_lb_text(tw_lb *l) {
    if (l->done) return l->buf;
    l->done = true;
    if (l->n) {
        const tw_node *n = l->n;
        const char *op = n->gn ? n->gn->op : n->idx == OP_CONST ? "Const" : "InputOp";
        if (n->name)
            snprintf(l->buf, sizeof l->buf, "node %zu ('%.48s', %s)", l->j, n->name, op);
        else
            snprintf(l->buf, sizeof l->buf, "node %zu (%s)", l->j, op);
    } else if (l->gn) {
        snprintf(l->buf, 128, "node %zu ('%.48s', %s)", l->j, l->gn->name ? l->gn->name : "",
                 l->gn->op);
    } else {
        snprintf(l->buf, sizeof l->buf, "value %lld ('%.48s')", (long long)l->j,
                 l->vname ? l->vname : "");
    }
    return l->buf;
}

static const char *tw_vname(const tw *w, int64_t v) {
    const char *s = w->g->values[v].name;
    return s ? s : "";
}

/* Graph metadata: the graph-level fields (tmfile.*); anything else cannot
 * be stored. */
static int tw_int_meta(const char *key, const char *s, const char *const *names, size_t nnames,
                       int64_t lo, int64_t hi, int64_t *out, tio_error *err) {
    for (size_t k = 0; k < nnames; k++)
        if (names[k] && strcmp(names[k], s) == 0) {
            *out = (int64_t)k;
            return TIO_OK;
        }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s && !*end && v >= lo && v <= hi) {
        *out = v;
        return TIO_OK;
    }
    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                    "model metadata %s = '%.64s' is not %s", key, s,
                    names ? "a known name or a number in range" : "a number in range");
}

static int tw_graph_meta(tw *w, unsigned flags, tio_error *err) {
    const tio_kv *m = &w->g->meta;
    const char *v = tio__kv_get(m, "tmfile.variant");
    if (v && strcmp(v, "lite") != 0 && strcmp(v, "old-cpp") != 0)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "model metadata tmfile.variant = '%.64s' (expected lite or old-cpp)", v);
    w->old = v && strcmp(v, "old-cpp") == 0;
    w->op_ver = w->old ? 2 : 1; /* TM2_OP_VER of each writer */
    int64_t x;
    static const char *const lay[] = {"NCHW", "NHWC"};
    for (size_t k = 0; k < m->count; k++) {
        const char *key = m->keys[k], *s = m->values[k];
        int rc = TIO_OK;
        if (strcmp(key, "tmfile.variant") == 0) continue;
        if (strcmp(key, "tmfile.orig_format") == 0) {
            rc = w->old ? tw_int_meta(key, s, orig_old, NORIG_OLD, INT32_MIN, INT32_MAX, &x, err)
                        : tw_int_meta(key, s, orig_lite, NORIG_LITE, INT32_MIN, INT32_MAX, &x, err);
            w->orig = (int32_t)x;
        } else if (strcmp(key, "tmfile.graph_layout") == 0) {
            rc = tw_int_meta(key, s, lay, 2, INT32_MIN, INT32_MAX, &x, err);
            w->glayout = (int32_t)x;
        } else if (strcmp(key, "tmfile.model_layout") == 0) {
            rc = tw_int_meta(key, s, lay, 2, INT32_MIN, INT32_MAX, &x, err);
            w->mlayout = (int32_t)x;
        } else if (strcmp(key, "tmfile.sub_format") == 0) {
            rc = tw_int_meta(key, s, NULL, 0, INT32_MIN, INT32_MAX, &x, err);
            w->subf = (int32_t)x;
        } else if (strcmp(key, "tmfile.subgraph_id") == 0) {
            rc = tw_int_meta(key, s, NULL, 0, 0, UINT32_MAX, &x, err);
            w->sid = (uint32_t)x;
        } else if (strcmp(key, "tmfile.op_ver") == 0) {
            rc = tw_int_meta(key, s, NULL, 0, 0, UINT32_MAX, &x, err);
            w->op_ver = (uint32_t)x;
        } else if (strcmp(key, "tmfile.model_name") == 0) {
            w->mname = s;
        } else if (strcmp(key, "tmfile.subgraph_name") == 0) {
            w->sname = s;
        } else if (!(flags & TIO_SAVE_DROP_METADATA)) {
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "model metadata '%s' has no place in a tmfile (it stores "
                          "tmfile.orig_format, tmfile.graph_layout, tmfile.model_layout, "
                          "tmfile.model_name, tmfile.subgraph_name, tmfile.sub_format, "
                          "tmfile.subgraph_id, tmfile.op_ver, tmfile.variant; "
                          "TIO_SAVE_DROP_METADATA drops the others)",
                          key);
        }
        if (rc) return rc;
    }
    return TIO_OK;
}

/* --- attribute helpers */

static const tio_gattr *tw_attr(const tio_gnode *n, const char *name, uint8_t *used) {
    for (size_t k = 0; k < n->attr_count; k++)
        if (strcmp(n->attrs[k].name, name) == 0) {
            if (used) used[k] = 1;
            return &n->attrs[k];
        }
    return NULL;
}

static int tw_field(const tw_node *n, const char *name) {
    for (unsigned k = 0; k < n->nf; k++)
        if (strcmp(n->pd->f[k].name, name) == 0) return (int)k;
    return -1;
}
static void tw_set_i(tw_node *n, const char *name, int64_t v) {
    int k = tw_field(n, name);
    if (k >= 0) {
        n->pv[k].present = true;
        n->pv[k].i = v;
    }
}
static void tw_set_f(tw_node *n, const char *name, double v) {
    int k = tw_field(n, name);
    if (k >= 0) {
        n->pv[k].present = true;
        n->pv[k].f = v;
    }
}
static void tw_set_ints(tw_node *n, const char *name, const int64_t *v, size_t cnt) {
    int k = tw_field(n, name);
    if (k >= 0) {
        n->pv[k].present = true;
        n->pv[k].ints = v;
        n->pv[k].count = cnt;
    }
}

/* Selects the operator and its param struct. The values of its fields are
 * allocated per node, as many as the struct has (a node of a model with many
 * constants is then small: no page faults on a large array), and kept across
 * a change of operator like the fields of a fixed array. On failure w->nomem
 * is set and the node has no fields. */
static void tw_use_op(tw *w, tw_node *n, int idx) {
    n->idx = idx;
    n->pd = tm_param_of(idx, w->old, n->op_ver, &n->nf);
    n->has_param = n->pd != NULL;
    if (n->nf > n->npv) {
        tw_pv *pv = realloc(n->pv, n->nf * sizeof *pv);
        if (!pv) {
            w->nomem = true;
            n->nf = 0;
            return;
        }
        memset(pv + n->npv, 0, (n->nf - n->npv) * sizeof *pv);
        n->pv = pv;
        n->npv = n->nf;
    }
}

/* A per-output INTS attribute (tm2_layout, ...): one entry per output. */
static int tw_per_output(const tio_gattr *a, size_t nout, tw_lb *lbl, int64_t lo, int64_t hi,
                         const int64_t **out, tio_error *err) {
    if (a->type != TIO_ATTR_INTS || a->count != nout)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' must be INTS with one entry per output (%zu)",
                        tw_lb_text(lbl), a->name, nout);
    for (size_t k = 0; k < nout; k++)
        if (a->ints[k] < lo || a->ints[k] > hi)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute '%s'[%zu] = %lld is outside [%lld, %lld]",
                            tw_lb_text(lbl), a->name, k, (long long)a->ints[k], (long long)lo,
                            (long long)hi);
    *out = a->ints;
    return TIO_OK;
}

/* The tm2_* attributes of any node. */
static int tw_private_attrs(tw *w, tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    int rc = TIO_OK;
    const tio_gattr *a;
    (void)w;
    if ((a = tw_attr(gn, "tm2_op_ver", used)) != NULL) {
        if (a->type != TIO_ATTR_INT || a->i < 0 || a->i > (int64_t)UINT32_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute 'tm2_op_ver' must be an INT in [0, 2^32)",
                            tw_lb_text(lbl));
        n->op_ver = (uint32_t)a->i;
    }
    if ((a = tw_attr(gn, "tm2_dynamic_shape", used)) != NULL) {
        if (a->type != TIO_ATTR_INT || a->i < 0 || a->i > 255)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute 'tm2_dynamic_shape' must be an INT in [0, 255]",
                            tw_lb_text(lbl));
        n->dyn = (uint8_t)a->i;
    }
    if ((a = tw_attr(gn, "tm2_layout", used)) != NULL)
        rc = tw_per_output(a, gn->output_count, lbl, INT32_MIN, INT32_MAX, &n->layouts, err);
    if (!rc && (a = tw_attr(gn, "tm2_type", used)) != NULL)
        rc = tw_per_output(a, gn->output_count, lbl, INT32_MIN, INT32_MAX, &n->types, err);
    if (!rc && (a = tw_attr(gn, "tm2_buffer_size", used)) != NULL)
        rc = tw_per_output(a, gn->output_count, lbl, -1, UINT32_MAX, &n->bufsizes, err);
    if (!rc && (a = tw_attr(gn, "tm2_param", used)) != NULL) {
        if (a->type != TIO_ATTR_INTS || a->count > TM_RAW_PARAM_MAX / 4)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute 'tm2_param' must be INTS of at most %u words",
                            tw_lb_text(lbl), TM_RAW_PARAM_MAX / 4);
        for (size_t k = 0; k < a->count; k++)
            if (a->ints[k] < INT32_MIN || a->ints[k] > (int64_t)UINT32_MAX)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: attribute 'tm2_param'[%zu] is not a 32-bit word",
                                tw_lb_text(lbl), k);
        n->raw = a->ints;
        n->nraw = a->count;
    }
    if (rc) return rc;
    const tio_gattr *qc = tw_attr(gn, "tm2_quant_count", used),
                    *qs = tw_attr(gn, "tm2_quant_scale", used),
                    *qz = tw_attr(gn, "tm2_quant_zero_point", used),
                    *qw = tw_attr(gn, "tm2_quant_width", used);
    if (!qc && !qs && !qz && !qw) return TIO_OK;
    if (!qc || !qs || !qz)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: quant params need tm2_quant_count, tm2_quant_scale and "
                        "tm2_quant_zero_point together",
                        tw_lb_text(lbl));
    rc = tw_per_output(qc, gn->output_count, lbl, 0, UINT32_MAX, &n->qcount, err);
    if (rc) return rc;
    uint64_t total = 0;
    for (size_t k = 0; k < gn->output_count; k++) total += (uint64_t)n->qcount[k];
    if (qs->type != TIO_ATTR_FLOATS || qs->count != total || qz->type != TIO_ATTR_INTS ||
        qz->count != total || (qw && (qw->type != TIO_ATTR_INTS || qw->count != total)))
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: tm2_quant_scale (FLOATS), tm2_quant_zero_point (INTS) and "
                        "tm2_quant_width (INTS) need %llu entries (the sum of tm2_quant_count)",
                        tw_lb_text(lbl), (unsigned long long)total);
    for (size_t k = 0; k < total; k++)
        if (qz->ints[k] < INT32_MIN || qz->ints[k] > INT32_MAX ||
            (qw && (qw->ints[k] < INT32_MIN || qw->ints[k] > INT32_MAX)))
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: quant param %zu does not fit int32", tw_lb_text(lbl), k);
    if (qw && !w->old)
        return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                        "%s: tm2_quant_width would be lost: Tengine-lite files carry no "
                        "QuantParam.width (write the old-cpp variant)",
                        tw_lb_text(lbl));
    n->qscale = qs->floats;
    n->qzp = qz->ints;
    n->qwidth = qw ? qw->ints : NULL;
    return TIO_OK;
}

/* Attributes of a node from a tmfile graph: its param fields. */
static int tw_native_params(tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    for (size_t k = 0; k < gn->attr_count; k++) {
        if (used[k]) continue;
        const tio_gattr *a = &gn->attrs[k];
        int fi = n->pd ? tw_field(n, a->name) : -1;
        if (fi < 0) {
            if (n->pd)
                return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                "%s: attribute '%s' has no field in %s%s", tw_lb_text(lbl), a->name,
                                n->pd->name,
                                n->nf < n->pd->n ? " (the old C++ layout)" : "");
            return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                            "%s: attribute '%s' would be lost: %s has no param", tw_lb_text(lbl),
                            a->name, n->idx >= 0 ? tm_ops[n->idx].name : "the operator");
        }
        const tm_field *f = &n->pd->f[fi];
        tw_pv *v = &n->pv[fi];
        bool ok = false;
        int64_t lo = INT32_MIN, hi = INT32_MAX;
        switch (f->kind) {
        case TF_U32: lo = 0; hi = UINT32_MAX; /* fall through */
        case TF_I32:
        case TF_BOOL:
            if (f->kind == TF_BOOL) {
                lo = 0;
                hi = 255;
            }
            ok = a->type == TIO_ATTR_INT;
            if (ok && (a->i < lo || a->i > hi))
                return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                "%s: attribute '%s' = %lld does not fit %s.%s", tw_lb_text(lbl),
                                a->name, (long long)a->i, n->pd->name, f->name);
            v->i = a->i;
            break;
        case TF_F32:
            ok = a->type == TIO_ATTR_FLOAT;
            v->f = a->f;
            break;
        case TF_STR:
            ok = a->type == TIO_ATTR_STRING;
            v->s = a->s;
            break;
        case TF_VDIMS:
            ok = a->type == TIO_ATTR_INTS;
            for (size_t m = 0; ok && m < a->count; m++)
                if (a->ints[m] < INT32_MIN || a->ints[m] > INT32_MAX)
                    return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                    "%s: attribute '%s'[%zu] = %lld does not fit int32",
                                    tw_lb_text(lbl), a->name, m, (long long)a->ints[m]);
            v->ints = a->ints;
            v->count = a->count;
            break;
        default:
            ok = a->type == TIO_ATTR_FLOATS && (f->kind != TF_VANCHORS || a->count % 4 == 0);
            v->floats = a->floats;
            v->count = a->count;
            break;
        }
        if (!ok)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute '%s' has the wrong type for %s.%s", tw_lb_text(lbl),
                            a->name, n->pd->name, f->name);
        v->present = true;
        used[k] = 1;
    }
    return TIO_OK;
}

/* --- operators of graphs from other formats (ONNX names) */

static const tio_gvalue *tw_in_value(const tw *w, const tio_gnode *gn, size_t k) {
    return k < gn->input_count && gn->inputs[k] >= 0 ? &w->g->values[gn->inputs[k]] : NULL;
}

static int tw_ints2(const tio_gattr *a, tw_lb *lbl, size_t want, int64_t *out,
                    tio_error *err) {
    if (a->type != TIO_ATTR_INTS || a->count != want)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' needs %zu integers (tmfile operators are 2-D)",
                        tw_lb_text(lbl), a->name, want);
    for (size_t k = 0; k < want; k++) {
        if (a->ints[k] < INT32_MIN || a->ints[k] > INT32_MAX)
            return tio__err(err, TIO_E_LOSSY, TM_FMT, -1, "%s: attribute '%s' does not fit int32",
                            tw_lb_text(lbl), a->name);
        out[k] = a->ints[k];
    }
    return TIO_OK;
}

static int tw_int_attr(const tio_gattr *a, tw_lb *lbl, int64_t *out, tio_error *err) {
    if (a->type != TIO_ATTR_INT || a->i < INT32_MIN || a->i > INT32_MAX)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' must be an INT that fits int32", tw_lb_text(lbl),
                        a->name);
    *out = a->i;
    return TIO_OK;
}
static int tw_float_attr(const tio_gattr *a, tw_lb *lbl, double *out, tio_error *err) {
    if (a->type == TIO_ATTR_FLOAT) *out = a->f;
    else if (a->type == TIO_ATTR_INT) *out = (double)a->i;
    else
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "%s: attribute '%s' must be a FLOAT",
                        tw_lb_text(lbl), a->name);
    return TIO_OK;
}

/* auto_pad: rten's AutoPad enum (0 Same, 1 NotSet) or ONNX's strings. 1 = SAME_UPPER. */
static int tw_auto_pad(const tio_gattr *a, tw_lb *lbl, int *same, tio_error *err) {
    *same = 0;
    if (!a) return TIO_OK;
    if (a->type == TIO_ATTR_INT && (a->i == 0 || a->i == 1)) {
        *same = a->i == 0;
        return TIO_OK;
    }
    if (a->type == TIO_ATTR_STRING) {
        if (strcmp(a->s, "NOTSET") == 0 || strcmp(a->s, "VALID") == 0) return TIO_OK;
        if (strcmp(a->s, "SAME_UPPER") == 0) {
            *same = 1;
            return TIO_OK;
        }
    }
    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                    "%s: auto_pad value not supported by tmfile (Same/SAME_UPPER, NotSet, VALID)",
                    tw_lb_text(lbl));
}

static int tw_foreign(tw *w, tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    const char *op = gn->op;
    const tio_gattr *a;
    int rc = TIO_OK;
    int64_t two[4];
    double f;
    static const struct {
        const char *onnx;
        int idx;
    } simple[] = {{"Sigmoid", 37}, {"Tanh", 36}, {"MatMul", OP_MATMUL}, {"Dropout", 8},
                  {"PRelu", 17},   {"Abs", 68},  {"Ceil", 83},          {"Round", 85},
                  {"Mish", 97},    {"Softplus", 102}, {"Reciprocal", 103}, {"Shape", 94},
                  {"Where", 95},   {"Const", OP_CONST}, {"InputOp", OP_INPUT}};
    for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++)
        if (strcmp(op, simple[k].onnx) == 0) {
            tw_use_op(w, n, simple[k].idx);
            return TIO_OK;
        }
    static const struct {
        const char *onnx;
        int type;
        size_t nin;
    } elt[] = {{"Mul", 0, 2},  {"Add", 2, 2},  {"Sub", 4, 2},   {"Max", 6, 2},  {"Div", 10, 2},
               {"Log", 11, 1}, {"Exp", 12, 1}, {"Sqrt", 13, 1}, {"Floor", 14, 1}, {"Pow", 16, 2}};
    for (size_t k = 0; k < sizeof elt / sizeof elt[0]; k++)
        if (strcmp(op, elt[k].onnx) == 0) {
            if (gn->input_count != elt[k].nin)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: tmfile's Eltwise %s takes %zu inputs, the node has %zu",
                                tw_lb_text(lbl), eltwise_names[elt[k].type], elt[k].nin,
                                gn->input_count);
            tw_use_op(w, n, OP_ELTWISE);
            tw_set_i(n, "type", elt[k].type);
            return TIO_OK;
        }
    if (strcmp(op, "Relu") == 0 || strcmp(op, "LeakyRelu") == 0) {
        tw_use_op(w, n, OP_RELU);
        f = op[0] == 'L' ? 0.01 : 0.0;
        if (op[0] == 'L' && (a = tw_attr(gn, "alpha", used)) != NULL)
            rc = tw_float_attr(a, lbl, &f, err);
        tw_set_f(n, "negative_slope", f);
        return rc;
    }
    if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0 ||
        strcmp(op, "Concat") == 0) {
        tw_use_op(w, n, op[0] == 'S' ? 28 : op[0] == 'L' ? 99 : 3);
        int64_t axis = op[0] == 'C' ? 0 : -1;
        if ((a = tw_attr(gn, "axis", used)) != NULL) rc = tw_int_attr(a, lbl, &axis, err);
        tw_set_i(n, "axis", axis);
        return rc;
    }
    if (strcmp(op, "Flatten") == 0) {
        tw_use_op(w, n, 10);
        int64_t axis = 1;
        if ((a = tw_attr(gn, "axis", used)) != NULL) rc = tw_int_attr(a, lbl, &axis, err);
        if (rc) return rc;
        const tio_gvalue *x = tw_in_value(w, gn, 0);
        if (!x || x->rank < 1)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Flatten needs end_axis, and the input's rank is unknown",
                            tw_lb_text(lbl));
        tw_set_i(n, "axis", axis);
        tw_set_i(n, "end_axis", x->rank - 1);
        return TIO_OK;
    }
    if (strcmp(op, "Gemm") == 0) {
        tw_use_op(w, n, 31);
        double al = 1.0, be = 1.0;
        int64_t ta = 0, tb = 0;
        if ((a = tw_attr(gn, "alpha", used)) != NULL) rc = tw_float_attr(a, lbl, &al, err);
        if (!rc && (a = tw_attr(gn, "beta", used)) != NULL) rc = tw_float_attr(a, lbl, &be, err);
        if (!rc && ((a = tw_attr(gn, "transpose_a", used)) != NULL ||
                    (a = tw_attr(gn, "transA", used)) != NULL))
            rc = tw_int_attr(a, lbl, &ta, err);
        if (!rc && ((a = tw_attr(gn, "transpose_b", used)) != NULL ||
                    (a = tw_attr(gn, "transB", used)) != NULL))
            rc = tw_int_attr(a, lbl, &tb, err);
        if (rc) return rc;
        /* Tengine-lite has no kernel for its Gemm: the plain form
         * (y = x W^T + b, W [N, K] of known shape) is a FullyConnected, as
         * convert_tool writes it. Anything else stays a TM2 Gemm. */
        const tio_gvalue *wv = tw_in_value(w, gn, 1);
        if (ta == 0 && tb == 1 && al == 1.0 && be == 1.0 && wv && wv->rank == 2 &&
            wv->dims[0].value >= 0 && wv->dims[0].value <= INT32_MAX &&
            (gn->input_count == 2 || gn->input_count == 3)) {
            tw_use_op(w, n, 11);
            tw_set_i(n, "num_output", wv->dims[0].value);
            return TIO_OK;
        }
        tw_set_f(n, "alpha", al);
        tw_set_f(n, "beta", be);
        tw_set_i(n, "transA", ta);
        tw_set_i(n, "transB", tb);
        return TIO_OK;
    }
    if (strcmp(op, "BatchNormalization") == 0 || strcmp(op, "InstanceNormalization") == 0) {
        tw_use_op(w, n, op[0] == 'B' ? 1 : 66);
        f = 1e-5;
        if ((a = tw_attr(gn, "epsilon", used)) != NULL) rc = tw_float_attr(a, lbl, &f, err);
        tw_set_f(n, "eps", (double)(float)f);
        if (op[0] == 'B') {
            tw_set_f(n, "rescale_factor", 1.0);
            tw_set_i(n, "caffe_flavor", 0);
        }
        return rc;
    }
    if (strcmp(op, "HardSigmoid") == 0 || strcmp(op, "Elu") == 0) {
        bool hs = op[0] == 'H';
        tw_use_op(w, n, hs ? 64 : 73);
        double al = hs ? 0.2 : 1.0, be = 0.5;
        if ((a = tw_attr(gn, "alpha", used)) != NULL) rc = tw_float_attr(a, lbl, &al, err);
        if (!rc && hs && (a = tw_attr(gn, "beta", used)) != NULL)
            rc = tw_float_attr(a, lbl, &be, err);
        tw_set_f(n, "alpha", al);
        if (hs) tw_set_f(n, "beta", be);
        return rc;
    }
    if (strcmp(op, "Transpose") == 0) {
        tw_use_op(w, n, 77);
        if ((a = tw_attr(gn, "perm", used)) != NULL) {
            if (a->type != TIO_ATTR_INTS)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: attribute 'perm' must be INTS", tw_lb_text(lbl));
            for (size_t k = 0; k < a->count; k++)
                if (a->ints[k] < 0 || a->ints[k] > INT32_MAX)
                    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                    "%s: perm[%zu] is out of range", tw_lb_text(lbl), k);
            tw_set_ints(n, "tr_shape", a->ints, a->count);
        }
        return TIO_OK;
    }
    if (strcmp(op, "Reshape") == 0) {
        tw_use_op(w, n, OP_RESHAPE);
        if (tw_field(n, "re_shape") < 0)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: op_ver %u selects the old C++ TM2_ReshapeParam_V1, which tensio "
                            "does not write for a graph from another format",
                            tw_lb_text(lbl), n->op_ver);
        if ((a = tw_attr(gn, "allow_zero", used)) != NULL &&
            !(a->type == TIO_ATTR_INT && a->i == 0))
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Reshape has no allow_zero", tw_lb_text(lbl));
        const tio_gvalue *sv = tw_in_value(w, gn, 1);
        if (!sv || sv->tensor < 0)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Reshape stores its shape as a param, and the shape "
                            "input is not a constant",
                            tw_lb_text(lbl));
        const tio_tensor *st = w->c->tensors[sv->tensor];
        if ((st->dtype != TIO_INT32 && st->dtype != TIO_INT64) || st->numel > TM_MAX_DIMS ||
            st->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: the shape constant must hold at most %u int32/int64 values",
                            tw_lb_text(lbl), TM_MAX_DIMS);
        n->own = malloc(TM_MAX_DIMS * sizeof *n->own);
        if (!n->own) return tio__nomem(err, TM_FMT);
        for (size_t k = 0; k < st->numel; k++) {
            int64_t v = st->dtype == TIO_INT32 ? (int32_t)tio__ld32(st->data + 4 * k)
                                               : (int64_t)tio__ld64(st->data + 8 * k);
            if (v < INT32_MIN || v > INT32_MAX)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: shape[%zu] does not fit int32", tw_lb_text(lbl), k);
            n->own[k] = v;
        }
        tw_set_i(n, "is_mxnet", 0);
        tw_set_i(n, "reverse", 0);
        if (st->numel) tw_set_ints(n, "re_shape", n->own, (size_t)st->numel);
        tw_set_i(n, "is_onnx", 1);
        return TIO_OK;
    }
    if (strcmp(op, "Conv") == 0) {
        tw_use_op(w, n, OP_CONV);
        const tio_gvalue *wv = tw_in_value(w, gn, 1);
        int64_t kd[4];
        if (!wv || wv->rank != 4)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Convolution needs a rank-4 weight of known shape",
                            tw_lb_text(lbl));
        for (int k = 0; k < 4; k++) {
            kd[k] = wv->dims[k].value;
            if (kd[k] < 0 || kd[k] > INT32_MAX)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: the weight's dim %d is unknown or too large", tw_lb_text(lbl),
                                k);
        }
        int64_t group = 1, st[2] = {1, 1}, dl[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
        if ((a = tw_attr(gn, "groups", used)) != NULL || (a = tw_attr(gn, "group", used)) != NULL)
            rc = tw_int_attr(a, lbl, &group, err);
        if (!rc && (a = tw_attr(gn, "strides", used)) != NULL) rc = tw_ints2(a, lbl, 2, st, err);
        if (!rc && (a = tw_attr(gn, "dilations", used)) != NULL) rc = tw_ints2(a, lbl, 2, dl, err);
        if (!rc && (a = tw_attr(gn, "pads", used)) != NULL) rc = tw_ints2(a, lbl, 4, pads, err);
        if (!rc && (a = tw_attr(gn, "kernel_shape", used)) != NULL) {
            rc = tw_ints2(a, lbl, 2, two, err);
            if (!rc && (two[0] != kd[2] || two[1] != kd[3]))
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: kernel_shape disagrees with the weight's shape",
                              tw_lb_text(lbl));
        }
        int same = 0;
        if (!rc) rc = tw_auto_pad(tw_attr(gn, "auto_pad", used), lbl, &same, err);
        if (rc) return rc;
        if (same) pads[0] = pads[1] = pads[2] = pads[3] = -1;
        if (group < 1 || kd[1] * group > INT32_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "%s: group %lld is invalid",
                            tw_lb_text(lbl), (long long)group);
        tw_set_i(n, "kernel_h", kd[2]);
        tw_set_i(n, "kernel_w", kd[3]);
        tw_set_i(n, "stride_h", st[0]);
        tw_set_i(n, "stride_w", st[1]);
        tw_set_i(n, "dilation_h", dl[0]);
        tw_set_i(n, "dilation_w", dl[1]);
        tw_set_i(n, "input_channel", kd[1] * group);
        tw_set_i(n, "output_channel", kd[0]);
        tw_set_i(n, "group", group);
        tw_set_i(n, "activation", -1);
        tw_set_i(n, "pad_h0", pads[0]);
        tw_set_i(n, "pad_w0", pads[1]);
        tw_set_i(n, "pad_h1", pads[2]);
        tw_set_i(n, "pad_w1", pads[3]);
        return TIO_OK;
    }
    bool gmax = strcmp(op, "GlobalMaxPool") == 0, gavg = strcmp(op, "GlobalAveragePool") == 0;
    bool mp = strcmp(op, "MaxPool") == 0, ap = strcmp(op, "AveragePool") == 0;
    if (gmax || gavg || mp || ap) {
        tw_use_op(w, n, OP_POOL);
        int64_t k2[2] = {0, 0}, st[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
        if (mp || ap) {
            if ((a = tw_attr(gn, "kernel_size", used)) != NULL ||
                (a = tw_attr(gn, "kernel_shape", used)) != NULL)
                rc = tw_ints2(a, lbl, 2, k2, err);
            else
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "%s: the kernel size is missing",
                              tw_lb_text(lbl));
            if (!rc && (a = tw_attr(gn, "strides", used)) != NULL)
                rc = tw_ints2(a, lbl, 2, st, err);
            if (!rc && (a = tw_attr(gn, "pads", used)) != NULL) rc = tw_ints2(a, lbl, 4, pads, err);
            int same = 0;
            if (!rc) rc = tw_auto_pad(tw_attr(gn, "auto_pad", used), lbl, &same, err);
            if (!rc && same)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: tmfile's Pooling has no automatic (Same) padding",
                              tw_lb_text(lbl));
            static const char *const zero_only[] = {"ceil_mode", "count_include_pad"};
            for (size_t k = 0; !rc && k < 2; k++)
                if ((a = tw_attr(gn, zero_only[k], used)) != NULL &&
                    !(a->type == TIO_ATTR_INT && a->i == 0))
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: %s = 1 is not supported by tmfile's Pooling",
                                  tw_lb_text(lbl), zero_only[k]);
            if (rc) return rc;
        }
        tw_set_i(n, "alg", (gmax || mp) ? 0 : 1);
        tw_set_i(n, "kernel_h", k2[0]);
        tw_set_i(n, "kernel_w", k2[1]);
        tw_set_i(n, "stride_h", st[0]);
        tw_set_i(n, "stride_w", st[1]);
        tw_set_i(n, "global", (gmax || gavg) ? 1 : 0);
        /* convert_tool's rule for asymmetric padding */
        tw_set_i(n, "caffe_flavor", pads[0] != pads[2] && pads[1] != pads[3] ? 1 : 0);
        tw_set_i(n, "pad_h0", pads[0]);
        tw_set_i(n, "pad_w0", pads[1]);
        tw_set_i(n, "pad_h1", pads[2]);
        tw_set_i(n, "pad_w1", pads[3]);
        return TIO_OK;
    }
    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                    "%s: tmfile has no operator for '%s' (tensio maps Conv, Gemm, MatMul, "
                    "MaxPool, AveragePool, Global*Pool, Relu, LeakyRelu, Sigmoid, Tanh, Softmax, "
                    "LogSoftmax, Concat, Flatten, Reshape, Transpose, BatchNormalization, "
                    "InstanceNormalization, Add, Sub, Mul, Div, Max, Pow and a few unary "
                    "operators)",
                    tw_lb_text(lbl), op);
}

/* --- the plan of the file */

static int tw_prepare(tw *w, tio_write_plan *p, tio_error *err) {
    memset(w, 0, sizeof *w);
    w->plan = p;
    w->c = tio__plan_container(p);
    const tio_graph *g = w->g = w->c->graph;
    unsigned flags = tio__plan_flags(p);
    if (!g)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "a model needs a graph; this container holds tensors only");
    if (g->opaque)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "the model cannot be re-encoded: %s (convert the weights to a tensor "
                        "format instead)",
                        g->opaque);
    w->native = g->native_format && strcmp(g->native_format, TM_FMT) == 0;
    int rc = tw_graph_meta(w, flags, err);
    if (rc) return rc;
    size_t nv = g->value_count, ngn = g->node_count;

    /* who produces each value */
    int64_t *prod = malloc((nv ? nv : 1) * sizeof *prod);
    w->vmap = malloc((nv ? nv : 1) * sizeof *w->vmap);
    uint8_t *isin = calloc(nv ? nv : 1, 1), *used = calloc(nv ? nv : 1, 1);
    if (!prod || !w->vmap || !isin || !used) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t i = 0; i < nv; i++) prod[i] = -1, w->vmap[i] = -1;
    for (size_t k = 0; k < g->input_count; k++) isin[g->inputs[k]] = 1;
    for (size_t k = 0; k < g->output_count; k++) used[g->outputs[k]] = 1;
    for (size_t j = 0; j < ngn && !rc; j++) {
        const tio_gnode *n = &g->nodes[j];
        tw_lb lb = {.gn = n, .j = j};
        if (n->opaque) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "%s: cannot be re-encoded: %s (convert the weights to a tensor format "
                          "instead)",
                          tw_lb_text(&lb), n->opaque);
            break;
        }
        for (size_t k = 0; k < n->input_count && !rc; k++) {
            if (n->inputs[k] < 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: input %zu is absent; tmfile has no optional inputs",
                              tw_lb_text(&lb), k);
            else used[n->inputs[k]] = 1;
        }
        if (n->output_count == 0 && !rc)
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "%s: the node has no outputs (Tengine refuses such a model)",
                          tw_lb_text(&lb));
        for (size_t k = 0; k < n->output_count && !rc; k++) {
            int64_t v = n->outputs[k];
            if (v < 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: output %zu is absent; tmfile has no optional outputs",
                              tw_lb_text(&lb), k);
            else if (prod[v] >= 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: value %lld ('%s') is also an output of node %lld; a tmfile "
                              "tensor has one producer",
                              tw_lb_text(&lb), (long long)v, tw_vname(w, v), (long long)prod[v]);
            else prod[v] = (int64_t)j;
        }
    }
    if (rc) goto out;
    /* nodes: Const for unproduced constants, InputOp for unproduced graph
     * inputs (the order convert_tool gives them), then the graph's nodes */
    size_t nsc = 0, nsi = 0;
    for (size_t i = 0; i < nv && !rc; i++) {
        if (prod[i] >= 0) continue;
        if (g->values[i].tensor >= 0) nsc++;
        else if (isin[i]) nsi++;
        else if (used[i])
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "value %zu ('%s') is read but neither produced by a node, a constant "
                          "nor a graph input",
                          i, tw_vname(w, (int64_t)i));
        else
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "value %zu ('%s') would be lost: tmfile keeps only the tensors that "
                          "nodes output",
                          i, tw_vname(w, (int64_t)i));
    }
    if (rc) goto out;
    w->nn = nsc + nsi + ngn;
    w->nodes = calloc(w->nn ? w->nn : 1, sizeof *w->nodes);
    if (!w->nodes) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < nv; i++)
        if (prod[i] < 0 && g->values[i].tensor >= 0) {
            w->nodes[m].sval = (int64_t)i;
            w->nodes[m].name = g->values[i].name;
            w->nodes[m].op_ver = w->op_ver;
            tw_use_op(w, &w->nodes[m++], OP_CONST);
        }
    for (size_t k = 0; k < g->input_count; k++) {
        int64_t v = g->inputs[k];
        if (prod[v] >= 0 || g->values[v].tensor >= 0) continue;
        prod[v] = -2; /* once */
        w->nodes[m].sval = v;
        w->nodes[m].name = g->values[v].name;
        w->nodes[m].op_ver = w->op_ver;
        tw_use_op(w, &w->nodes[m++], OP_INPUT);
    }
    for (size_t j = 0; j < ngn; j++) {
        tw_node *n = &w->nodes[m++];
        n->gn = &g->nodes[j];
        n->name = n->gn->name;
        n->op_ver = w->op_ver;
    }
    if (w->nomem) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    /* tensors in node-output order */
    size_t nt = 0;
    for (size_t j = 0; j < w->nn && !rc; j++) {
        tw_node *n = &w->nodes[j];
        n->nout = n->gn ? n->gn->output_count : 1;
        n->nin = n->gn ? n->gn->input_count : 0;
        n->outs = malloc(n->nout * sizeof *n->outs);
        n->ins = malloc((n->nin ? n->nin : 1) * sizeof *n->ins);
        if (!n->outs || !n->ins) rc = tio__nomem(err, TM_FMT);
        for (size_t k = 0; !rc && k < n->nout; k++) {
            int64_t v = n->gn ? n->gn->outputs[k] : n->sval;
            w->vmap[v] = (int64_t)nt;
            n->outs[k] = (int64_t)nt++;
        }
    }
    if (rc) goto out;
    if (nt > UINT32_MAX || w->nn > UINT32_MAX) {
        rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "too many tensors or nodes for u32 ids");
        goto out;
    }
    w->nt = nt;
    w->t = calloc(nt ? nt : 1, sizeof *w->t);
    if (!w->t) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    /* operators */
    for (size_t j = 0; j < w->nn && !rc; j++) {
        tw_node *n = &w->nodes[j];
        tw_lb lb = {.n = n, .j = j};
        if (!n->gn) {
            n->code = (uint32_t)tm_file_code(w->old, n->idx);
            continue;
        }
        for (size_t k = 0; k < n->nin; k++) n->ins[k] = w->vmap[n->gn->inputs[k]];
        uint8_t *au = calloc(n->gn->attr_count ? n->gn->attr_count : 1, 1);
        if (!au) {
            rc = tio__nomem(err, TM_FMT);
            break;
        }
        rc = tw_private_attrs(w, n, &lb, au, err);
        const char *tmname = n->gn->native_op ? n->gn->native_op : n->gn->op;
        int idx = w->native ? tm_find_op(tmname) : -1;
        if (rc) {
        } else if (idx >= 0) {
            tw_use_op(w, n, idx);
            if (n->raw && n->pd)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: tm2_param given for %s, which has a known param struct",
                              tw_lb_text(&lb), tm_ops[idx].name);
            if (!rc) rc = tw_native_params(n, &lb, au, err);
            if (!rc && n->raw) n->has_param = true;
        } else if (w->native && strncmp(tmname, "OpType", 6) == 0 && n->gn->native_id >= 0 &&
                   n->gn->native_id <= (int64_t)UINT32_MAX) {
            /* an operator code tensio does not know, kept by number */
            n->idx = -1;
            n->code = (uint32_t)n->gn->native_id;
            n->has_param = n->raw != NULL;
            rc = tw_native_params(n, &lb, au, err);
        } else {
            if (n->raw)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: tm2_param is meaningful only in a tmfile graph",
                              tw_lb_text(&lb));
            if (!rc) rc = tw_foreign(w, n, &lb, au, err);
            for (size_t k = 0; !rc && k < n->gn->attr_count; k++)
                if (!au[k])
                    rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                  "%s: attribute '%s' has no equivalent in tmfile's %s",
                                  tw_lb_text(&lb), n->gn->attrs[k].name, tm_ops[n->idx].name);
        }
        free(au);
        if (w->nomem) rc = tio__nomem(err, TM_FMT);
        if (rc) break;
        if (n->idx >= 0) {
            int64_t code = tm_file_code(w->old, n->idx);
            if (code < 0) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: the old C++ operator table has no %s (write the lite variant)",
                              tw_lb_text(&lb), tm_ops[n->idx].name);
                break;
            }
            n->code = (uint32_t)code;
            /* the param struct may depend on op_ver (old Reshape V1): refresh */
            unsigned nf;
            const tm_pdef *pd = tm_param_of(n->idx, w->old, n->op_ver, &nf);
            if (pd != n->pd)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: op_ver %u selects %s, which the attributes do not describe",
                              tw_lb_text(&lb), n->op_ver, pd ? pd->name : "no param");
        }
    }
    if (rc) goto out;
    /* tensors */
    for (size_t j = 0; j < w->nn && !rc; j++) {
        tw_node *n = &w->nodes[j];
        size_t qat = 0;
        for (size_t k = 0; k < n->nout && !rc; k++) {
            tw_tensor *t = &w->t[n->outs[k]];
            int64_t v = n->gn ? n->gn->outputs[k] : n->sval;
            const tio_gvalue *gv = &g->values[v];
            tw_lb lb = {.vname = gv->name, .j = (size_t)v};
            t->value = v;
            t->name = gv->name;
            t->ct = gv->tensor;
            t->layout = n->layouts ? (int32_t)n->layouts[k] : w->glayout;
            t->type = n->types ? (int32_t)n->types[k]
                               : tm_default_type(n->idx >= 0 ? n->idx : -1);
            if (!n->gn && n->idx == OP_CONST) t->type = TM_T_CONST;
            if (n->qcount) {
                t->nq = (size_t)n->qcount[k];
                t->qscale = n->qscale + qat;
                t->qzp = n->qzp + qat;
                t->qwidth = n->qwidth ? n->qwidth + qat : NULL;
                qat += t->nq;
            }
            tio_dtype dt;
            const int64_t *shape = NULL;
            int64_t rank;
            if (t->ct >= 0) {
                const tio_wtensor *wt = tio__plan_tensor(p, (size_t)t->ct);
                dt = wt->dtype;
                rank = (int64_t)wt->rank;
                shape = wt->shape;
                if (t->type != TM_T_CONST)
                    rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                  "%s: a constant whose tensor type is %d, not CONST (2): its "
                                  "data would be lost",
                                  tw_lb_text(&lb), t->type);
                else if (wt->nbytes > UINT32_MAX)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: %zu bytes of data exceed tmfile's 32-bit buffer size",
                                  tw_lb_text(&lb), wt->nbytes);
                t->bufsize = (uint32_t)wt->nbytes;
            } else {
                dt = gv->dtype == TIO_DTYPE_INVALID ? TIO_FLOAT32 : gv->dtype;
                rank = gv->rank;
            }
            if (rc) break;
            int code = tm_dtype_code(dt);
            if (code < 0) {
                rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                              "%s: dtype %s has no tmfile data type (FP32, FP16, INT8, UINT8, "
                              "INT32, INT16)",
                              tw_lb_text(&lb), tio_dtype_name(dt));
                break;
            }
            t->dcode = code;
            if (rank > (int64_t)TM_MAX_DIMS) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: rank %lld exceeds tmfile's %u dims", tw_lb_text(&lb),
                              (long long)rank, TM_MAX_DIMS);
                break;
            }
            /* a constant without dims is written without a dims vector */
            t->rank = (t->type == TM_T_CONST && rank == 0) ? -1 : rank;
            uint64_t numel = 1;
            for (int64_t d = 0; d < rank && !rc; d++) {
                int64_t dv = shape ? shape[d] : gv->dims[d].value;
                if (!shape && gv->dims[d].name && !(flags & TIO_SAVE_DROP_METADATA))
                    rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                  "%s: dim %lld is symbolic ('%s'); tmfile stores numbers "
                                  "(TIO_SAVE_DROP_METADATA drops dim names)",
                                  tw_lb_text(&lb), (long long)d, gv->dims[d].name);
                else if (dv > INT32_MAX)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: dim %lld = %lld does not fit int32", tw_lb_text(&lb),
                                  (long long)d, (long long)dv);
                t->dims[d] = (int32_t)dv;
                if (dv < 0 || tio__mul64_ovf(numel, (uint64_t)(dv < 0 ? 0 : dv), &numel))
                    numel = UINT64_MAX;
            }
            if (rc) break;
            if (t->type == TM_T_CONST && t->ct < 0) {
                int64_t bs = n->bufsizes ? n->bufsizes[k] : -1;
                uint64_t b;
                if (bs >= 0) {
                    t->bufsize = (uint32_t)bs;
                } else if (numel == UINT64_MAX ||
                           tio__mul64_ovf(numel, tio_dtype_size(dt), &b) || b > UINT32_MAX) {
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: a constant without data whose size (from its dims) is "
                                  "unknown or exceeds 32 bits",
                                  tw_lb_text(&lb));
                } else {
                    t->bufsize = (uint32_t)b;
                }
            }
        }
    }
    if (rc) goto out;
    /* every container tensor must be a constant of the graph */
    uint8_t *isconst = calloc(w->c->count ? w->c->count : 1, 1);
    if (!isconst) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t v = 0; v < nv; v++)
        if (g->values[v].tensor >= 0) isconst[g->values[v].tensor] = 1;
    for (size_t i = 0; i < w->c->count && !rc; i++) {
        if (!isconst[i])
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "tensor %zu%s%s%s is not a constant of the graph; a tmfile stores "
                          "only the model's constants",
                          i, w->c->tensors[i]->name ? " ('" : "",
                          w->c->tensors[i]->name ? w->c->tensors[i]->name : "",
                          w->c->tensors[i]->name ? "')" : "");
    }
    free(isconst);
    if (rc) goto out;
    /* graph inputs and outputs -> node indices */
    size_t *wprod = malloc((nt ? nt : 1) * sizeof *wprod);
    size_t *wslot = malloc((nt ? nt : 1) * sizeof *wslot);
    w->innodes = malloc((g->input_count ? g->input_count : 1) * sizeof *w->innodes);
    w->outnodes = malloc((g->output_count ? g->output_count : 1) * sizeof *w->outnodes);
    w->offs = malloc(((w->nn > nt ? w->nn : nt) + 1) * sizeof *w->offs);
    if (!wprod || !wslot || !w->innodes || !w->outnodes || !w->offs) {
        free(wprod);
        free(wslot);
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t j = 0; j < w->nn; j++)
        for (size_t k = 0; k < w->nodes[j].nout; k++) {
            wprod[w->nodes[j].outs[k]] = j;
            wslot[w->nodes[j].outs[k]] = k;
        }
    for (int side = 0; side < 2; side++) {
        const int64_t *list = side ? g->outputs : g->inputs;
        size_t cnt = side ? g->output_count : g->input_count, out = 0;
        uint32_t *dst = side ? w->outnodes : w->innodes;
        for (size_t k = 0; k < cnt; k++) {
            int64_t t = w->vmap[list[k]];
            /* a node's later outputs continue the entry of its first */
            if (out && dst[out - 1] == wprod[t] && wslot[t] > 0) continue;
            dst[out++] = (uint32_t)wprod[t];
        }
        if (side) w->nout = out;
        else w->nin = out;
    }
    free(wprod);
    free(wslot);
out:
    free(prod);
    free(isin);
    free(used);
    return rc;
}

/* --- emitting bytes (a dry run computes the layout) */

typedef struct tw_out {
    tio_sink *s; /* NULL: dry run */
    uint64_t pos;
} tw_out;

/* Small pieces go to the sink as they come: it gathers them into its buffer. */
static int o_bytes(tw_out *o, const void *p, size_t n, tio_error *err) {
    int rc = o->s ? tio__sink_write(o->s, p, n, err) : TIO_OK;
    o->pos += n;
    return rc;
}
static int o_align(tw_out *o, tio_error *err) {
    size_t pad = (size_t)((4 - o->pos % 4) % 4);
    int rc = pad && o->s ? tio__sink_zeros(o->s, pad, err) : TIO_OK;
    o->pos += pad;
    return rc;
}
static uint32_t o_at(const tw_out *o) { return o->pos > UINT32_MAX ? 0 : (uint32_t)o->pos; }
static int o_u32(tw_out *o, uint32_t v, tio_error *err) {
    uint8_t b[4];
    tio__st32(b, v);
    return o_bytes(o, b, 4, err);
}
/* An aligned object of 32-bit words; *off = where it starts. */
static int o_words(tw_out *o, const uint32_t *w, size_t n, uint32_t *off, tio_error *err) {
    int rc = o_align(o, err);
    *off = o_at(o);
    for (size_t k = 0; !rc && k < n; k++) rc = o_u32(o, w[k], err);
    return rc;
}
static uint32_t f2u(double d) {
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
/* A TM2_String (chars + NUL, then the struct); *off = 0 for NULL. */
static int o_string(tw_out *o, const char *s, uint32_t *off, tio_error *err) {
    *off = 0;
    if (!s) return TIO_OK;
    size_t n = strlen(s) + 1;
    uint32_t data = o_at(o);
    int rc = o_bytes(o, s, n, err);
    uint32_t st[2] = {(uint32_t)n, data};
    if (!rc) rc = o_words(o, st, 2, off, err);
    return rc;
}
/* A vector of int64 values stored as 32-bit words. */
static int o_vec_i(tw_out *o, const int64_t *v, size_t n, uint32_t *off, tio_error *err) {
    int rc = o_align(o, err);
    *off = o_at(o);
    if (!rc) rc = o_u32(o, (uint32_t)n, err);
    for (size_t k = 0; !rc && k < n; k++) rc = o_u32(o, (uint32_t)v[k], err);
    return rc;
}
static int o_vec_u(tw_out *o, const uint32_t *v, size_t n, uint32_t *off, tio_error *err) {
    int rc = o_align(o, err);
    *off = o_at(o);
    if (!rc) rc = o_u32(o, (uint32_t)n, err);
    for (size_t k = 0; !rc && k < n; k++) rc = o_u32(o, v[k], err);
    return rc;
}

static int tw_emit_param(tw *w, tw_out *o, const tw_node *n, uint32_t *poff, tio_error *err) {
    (void)w;
    *poff = 0;
    if (!n->has_param) return TIO_OK;
    if (!n->pd) {
        int rc = o_align(o, err);
        *poff = o_at(o);
        for (size_t k = 0; !rc && k < n->nraw; k++) rc = o_u32(o, (uint32_t)n->raw[k], err);
        return rc;
    }
    const tm_pdef *pd = n->pd;
    uint32_t sub[TW_MAXF];
    unsigned pos[TW_MAXF];
    unsigned size = tm_layout(pd, n->nf, pos);
    int rc = TIO_OK;
    /* children in field order */
    for (unsigned k = 0; k < n->nf && !rc; k++) {
        const tw_pv *v = &n->pv[k];
        sub[k] = 0;
        if (!v->present) continue;
        switch (pd->f[k].kind) {
        case TF_STR: rc = o_string(o, v->s, &sub[k], err); break;
        case TF_VDIMS: rc = o_vec_i(o, v->ints, v->count, &sub[k], err); break;
        case TF_VFLOATS:
        case TF_VANCHORS: {
            rc = o_align(o, err);
            sub[k] = o_at(o);
            size_t cnt = pd->f[k].kind == TF_VANCHORS ? v->count / 4 : v->count;
            if (!rc) rc = o_u32(o, (uint32_t)cnt, err);
            for (size_t m = 0; !rc && m < v->count; m++) rc = o_u32(o, f2u(v->floats[m]), err);
            break;
        }
        default: break;
        }
    }
    if (rc) return rc;
    uint8_t buf[TW_MAXF * 4 + 4];
    memset(buf, 0, sizeof buf);
    for (unsigned k = 0; k < n->nf; k++) {
        const tw_pv *v = &n->pv[k];
        uint8_t *q = buf + pos[k];
        switch (pd->f[k].kind) {
        case TF_I32:
        case TF_U32: tio__st32(q, (uint32_t)v->i); break;
        case TF_BOOL: q[0] = (uint8_t)v->i; break;
        case TF_F32: tio__st32(q, v->present ? f2u(v->f) : 0); break;
        default: tio__st32(q, sub[k]); break;
        }
    }
    rc = o_align(o, err);
    *poff = o_at(o);
    if (!rc) rc = o_bytes(o, buf, size, err);
    return rc;
}

static int tw_emit(tw *w, tw_out *o, uint32_t root, uint32_t *root_out, tio_error *err) {
    const tio_write_plan *p = w->plan;
    uint8_t hdr[TM_HEADER_LEN];
    memset(hdr, 0, sizeof hdr);
    hdr[0] = 2; /* ver_main 2, ver_sub 0, ver_compile 0, padding 0 */
    tio__st32(hdr + 8, root);
    int rc = o_bytes(o, hdr, sizeof hdr, err);
    uint32_t mname = 0;
    if (!rc) rc = o_string(o, w->mname, &mname, err);
    /* nodes */
    for (size_t j = 0; j < w->nn && !rc; j++) {
        const tw_node *n = &w->nodes[j];
        uint32_t sn = 0, vin = 0, vout = 0, poff = 0, opoff = 0;
        rc = o_string(o, n->name, &sn, err);
        if (!rc && n->nin) rc = o_vec_i(o, n->ins, n->nin, &vin, err);
        if (!rc && n->nout) rc = o_vec_i(o, n->outs, n->nout, &vout, err);
        if (!rc) rc = tw_emit_param(w, o, n, &poff, err);
        uint32_t op[3] = {n->op_ver, n->code, poff};
        if (!rc) rc = o_words(o, op, 3, &opoff, err);
        uint32_t nd[7] = {(uint32_t)j, vin, vout, opoff, sn, 0, n->dyn};
        if (!rc) rc = o_words(o, nd, 7, &w->offs[j], err);
    }
    uint32_t vnodes = 0, vtens = 0, vbufs = 0, vin = 0, vout = 0, soff = 0, vsubs = 0;
    if (!rc) rc = o_vec_u(o, w->offs, w->nn, &vnodes, err);
    /* tensors */
    uint32_t nbuf = 0;
    for (size_t i = 0; i < w->nt && !rc; i++) {
        const tw_tensor *t = &w->t[i];
        uint32_t sn = 0, vd = 0, vq = 0, toff = 0;
        rc = o_string(o, t->name, &sn, err);
        if (!rc && t->rank >= 0) {
            rc = o_align(o, err);
            vd = o_at(o);
            if (!rc) rc = o_u32(o, (uint32_t)t->rank, err);
            for (int64_t d = 0; !rc && d < t->rank; d++) rc = o_u32(o, (uint32_t)t->dims[d], err);
        }
        if (!rc && t->nq) {
            /* the params, then the vector of their offsets */
            uint32_t first = 0;
            for (size_t k = 0; !rc && k < t->nq; k++) {
                uint32_t q[3] = {(uint32_t)t->qzp[k], f2u(t->qscale[k]),
                                 t->qwidth ? (uint32_t)t->qwidth[k] : 0};
                uint32_t at;
                rc = o_words(o, q, 3, &at, err);
                if (k == 0) first = at;
            }
            if (!rc) rc = o_align(o, err);
            vq = o_at(o);
            if (!rc) rc = o_u32(o, (uint32_t)t->nq, err);
            for (size_t k = 0; !rc && k < t->nq; k++)
                rc = o_u32(o, first + (uint32_t)(k * TM_QUANT_LEN), err);
        }
        if (t->type == TM_T_CONST) nbuf++;
        uint32_t ts[8] = {(uint32_t)i, nbuf - 1, vd, sn, vq, (uint32_t)t->layout,
                          (uint32_t)t->type, (uint32_t)t->dcode};
        if (!rc) rc = o_words(o, ts, 8, &toff, err);
        w->offs[i] = toff;
    }
    if (!rc) rc = o_vec_u(o, w->offs, w->nt, &vtens, err);
    /* buffers: data (where the previous object ends), then the TM2_Buffer */
    size_t b = 0;
    for (size_t i = 0; i < w->nt && !rc; i++) {
        const tw_tensor *t = &w->t[i];
        if (t->type != TM_T_CONST) continue;
        uint32_t data = 0;
        if (t->ct >= 0) {
            /* no alignment: the data follows the previous (4-aligned) object */
            data = o_at(o);
            if (o->s && t->bufsize)
                rc = tio__plan_sink_tensor((tio_write_plan *)(uintptr_t)p, o->s, (size_t)t->ct,
                                           err);
            o->pos += t->bufsize;
        }
        uint32_t bs[2] = {t->bufsize, data};
        if (!rc) rc = o_words(o, bs, 2, &w->offs[b++], err);
    }
    if (!rc) rc = o_vec_u(o, w->offs, b, &vbufs, err);
    if (!rc) rc = o_vec_u(o, w->innodes, w->nin, &vin, err);
    if (!rc) rc = o_vec_u(o, w->outnodes, w->nout, &vout, err);
    uint32_t sname = 0;
    if (!rc) rc = o_string(o, w->sname, &sname, err);
    uint32_t sg[10] = {w->sid, (uint32_t)w->glayout, (uint32_t)w->mlayout, vin, vout, vnodes,
                       vtens, vbufs, sname, 0};
    if (!rc) rc = o_words(o, sg, w->old ? 9 : 10, &soff, err);
    uint32_t vs[2] = {1, soff};
    if (!rc) rc = o_words(o, vs, 2, &vsubs, err);
    uint32_t model[4] = {(uint32_t)w->orig, (uint32_t)w->subf, vsubs, mname};
    if (!rc) rc = o_words(o, model, 4, root_out, err);
    if (!rc && o->pos > UINT32_MAX)
        rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                      "the model needs %llu bytes; tmfile offsets are 32-bit",
                      (unsigned long long)o->pos);
    return rc;
}

static int tm_check(const tio_write_plan *p, tio_error *err) {
    tw w;
    int rc = tw_prepare(&w, (tio_write_plan *)(uintptr_t)p, err);
    tw_out o = {NULL, 0};
    uint32_t root = 0;
    if (!rc) rc = tw_emit(&w, &o, 0, &root, err);
    tw_free(&w);
    return rc;
}

static int tm_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    tw w;
    int rc = tw_prepare(&w, p, err);
    tw_out dry = {.s = NULL}, real = {.s = s};
    uint32_t root = 0, root2 = 0;
    if (!rc) rc = tw_emit(&w, &dry, 0, &root, err);
    if (!rc) rc = tw_emit(&w, &real, root, &root2, err);
    if (!rc && (root2 != root || real.pos != dry.pos))
        rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, -1, "internal error: the layout changed");
    tw_free(&w);
    return rc;
}

/* ----------------------------------------------------------- the format */

extern const tio_format_desc tio__format_tmfile;

const tio_format_desc tio__format_tmfile = {
    .name = "tmfile",
    .description = "Tengine model (.tmfile, tm2): Tengine-lite and old C++ layouts",
    .extensions = ".tmfile",
    .caps = TIO_CAP_NAMES | TIO_CAP_GRAPH,
    .versions = 0,
    .dtypes = TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_INT8) |
              TIO_DTYPE_BIT(TIO_UINT8) | TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT16),
    .probe = tm_probe,
    .read = tm_read,
    .check = tm_check,
    .write = tm_write,
};
