/*
 * The rten <-> ONNX mapping table (see opmap.h). Facts from the ONNX operator
 * documentation and from what rten-convert (robertknight/rten,
 * rten-convert/rten_convert/converter.py) writes for each ONNX attribute:
 * the names, the enum spellings and the defaults it applies.
 */
#include "rten/opmap.h"

#include <string.h>

#define N(a) ((uint8_t)(sizeof(a) / sizeof((a)[0])))

/* Field entries: the same value under a name; with an ONNX default; enums. */
#define F(fl, on, ty) {.field = fl, .onnx = on, .type = TIO_ATTR_##ty}
#define FI(fl, on, d) {.field = fl, .onnx = on, .type = TIO_ATTR_INT, .has_def = 1, .idef = d}
#define FF(fl, on, d) {.field = fl, .onnx = on, .type = TIO_ATTR_FLOAT, .has_def = 1, .fdef = d}
#define FV(fl, on, v)                                                                          \
    {.field = fl, .onnx = on, .type = TIO_ATTR_INTS, .has_def = 1, .vdef = v, .nvdef = N(v)}
#define FE(fl, on, s, d)                                                                       \
    {.field = fl, .onnx = on, .type = TIO_ATTR_STRING, .conv = TIO_RTEN_ENUM, .strs = s,        \
     .nstrs = N(s), .has_def = 1, .sdef = d}
#define FT(fl, on) {.field = fl, .onnx = on, .type = TIO_ATTR_INT, .conv = TIO_RTEN_DTYPE}
#define FAUTOPAD                                                                               \
    {.field = "auto_pad", .onnx = "auto_pad", .type = TIO_ATTR_STRING, .conv = TIO_RTEN_AUTOPAD, \
     .strs = s_AutoPad, .nstrs = N(s_AutoPad), .has_def = 1, .sdef = "NOTSET"}
/* Extras: ignored, or accepted with the ONNX default only. */
#define XIGN(on) {.onnx = on}
#define XI(on, d) {.onnx = on, .type = TIO_ATTR_INT, .must = 1, .idef = d}
#define XF(on, d) {.onnx = on, .type = TIO_ATTR_FLOAT, .must = 1, .fdef = d}
#define XS(on, d) {.onnx = on, .type = TIO_ATTR_STRING, .must = 1, .sdef = d}
#define XV(on, d) {.onnx = on, .type = TIO_ATTR_INTS, .must = 1, .idef = d}

/* ONNX spellings of rten's enums, indexed by the rten value. AutoPad: rten's
 * Same pads as ONNX's SAME_UPPER (SAME_LOWER has no rten form). */
static const char *const s_AutoPad[] = {"SAME_UPPER", "NOTSET"};
static const char *const s_RNNDirection[] = {"forward", "reverse", "bidirectional"};
static const char *const s_CoordTransformMode[] = {"half_pixel", "asymmetric", "align_corners",
                                                   "pytorch_half_pixel"};
static const char *const s_NearestMode[] = {"floor", "ceil", "round_prefer_floor",
                                            "round_prefer_ceil"};
static const char *const s_ResizeMode[] = {"nearest", "linear"};
static const char *const s_DepthToSpaceMode[] = {"DCR", "CRD"};
static const char *const s_GeluApproximation[] = {"none", "tanh"};
static const char *const s_PadMode[] = {"constant", "reflect", "edge", "wrap"};
static const char *const s_ScatterReduction[] = {"none", "add", "mul", "min", "max"};

/* rten-convert's defaults for absent list attributes. */
static const int64_t v_ones2[] = {1, 1};
static const int64_t v_zeros4[] = {0, 0, 0, 0};

static const tio_rten_fmap f_ArgMax[] = {FI("axis", "axis", 0), FI("keep_dims", "keepdims", 1)};
static const tio_rten_fmap f_AveragePool[] = {
    F("kernel_size", "kernel_shape", INTS), FAUTOPAD, FV("pads", "pads", v_zeros4),
    FV("strides", "strides", v_ones2),      FI("count_include_pad", "count_include_pad", 0),
    FI("ceil_mode", "ceil_mode", 0)};
static const tio_rten_fmap f_BatchNormalization[] = {FF("epsilon", "epsilon", 1e-5)};
static const tio_rten_fmap f_Cast[] = {
    {.field = "to", .onnx = "to", .type = TIO_ATTR_INT, .conv = TIO_RTEN_DTYPE, .has_def = 1,
     .idef = 1}};
static const tio_rten_fmap f_Concat[] = {F("axis", "axis", INT)};
static const tio_rten_fmap f_ConstantOfShape[] = {
    F("value_type", NULL, INT), /* the union's tag: follows `value` */
    {.field = "value", .onnx = "value", .type = TIO_ATTR_FLOAT, .conv = TIO_RTEN_SCALAR,
     .has_def = 1, .fdef = 0.0}};
static const tio_rten_fmap f_Conv[] = {FAUTOPAD, FV("pads", "pads", v_zeros4),
                                       FI("groups", "group", 1), FV("strides", "strides", v_ones2),
                                       FV("dilations", "dilations", v_ones2)};
static const tio_rten_fmap f_ConvTranspose[] = {
    FV("strides", "strides", v_ones2), FAUTOPAD,
    FV("pads", "pads", v_zeros4),      FI("groups", "group", 1),
    F("output_padding", "output_padding", INTS), F("dilations", "dilations", INTS)};
static const tio_rten_fmap f_CumSum[] = {FI("exclusive", "exclusive", 0),
                                         FI("reverse", "reverse", 0)};
static const tio_rten_fmap f_Flatten[] = {FI("axis", "axis", 1)};
static const tio_rten_fmap f_Gather[] = {FI("axis", "axis", 0)};
static const tio_rten_fmap f_Gemm[] = {FF("alpha", "alpha", 1.0), FF("beta", "beta", 1.0),
                                       FI("transpose_a", "transA", 0),
                                       FI("transpose_b", "transB", 0)};
static const tio_rten_fmap f_GRU[] = {FE("direction", "direction", s_RNNDirection, "forward"),
                                      F("hidden_size", "hidden_size", INT),
                                      FI("linear_before_reset", "linear_before_reset", 0)};
static const tio_rten_fmap f_LeakyRelu[] = {FF("alpha", "alpha", 0.01)};
static const tio_rten_fmap f_LSTM[] = {FE("direction", "direction", s_RNNDirection, "forward"),
                                       F("hidden_size", "hidden_size", INT)};
static const tio_rten_fmap f_MaxPool[] = {
    F("kernel_size", "kernel_shape", INTS), FAUTOPAD, FV("pads", "pads", v_zeros4),
    FV("strides", "strides", v_ones2), FI("ceil_mode", "ceil_mode", 0)};
static const tio_rten_fmap f_Mod[] = {FI("fmod", "fmod", 0)};
static const tio_rten_fmap f_Pad[] = {FE("mode", "mode", s_PadMode, "constant")};
static const tio_rten_fmap f_ReduceMean[] = {F("axes", "axes", INTS),
                                             FI("keep_dims", "keepdims", 1),
                                             FI("noop_with_empty_axes", "noop_with_empty_axes", 0)};
static const tio_rten_fmap f_Reshape[] = {FI("allow_zero", "allowzero", 0)};
static const tio_rten_fmap f_Resize[] = {
    FE("mode", "mode", s_ResizeMode, "nearest"),
    FE("coord_mode", "coordinate_transformation_mode", s_CoordTransformMode, "half_pixel"),
    FE("nearest_mode", "nearest_mode", s_NearestMode, "round_prefer_floor")};
static const tio_rten_fmap f_Shape[] = {F("start", "start", INT), F("end", "end", INT)};
static const tio_rten_fmap f_Split[] = {FI("axis", "axis", 0),
                                        F("num_outputs", "num_outputs", INT)};
static const tio_rten_fmap f_Softmax[] = {FI("axis", "axis", -1)};
static const tio_rten_fmap f_Transpose[] = {F("perm", "perm", INTS)};
static const tio_rten_fmap f_ScatterElements[] = {
    FI("axis", "axis", 0), FE("reduction", "reduction", s_ScatterReduction, "none")};
/* ONNX's Scatter (deprecated) has no reduction: rten's field stays rten.* */
static const tio_rten_fmap f_Scatter[] = {FI("axis", "axis", 0), F("reduction", NULL, INT)};
static const tio_rten_fmap f_OneHot[] = {FI("axis", "axis", -1)};
static const tio_rten_fmap f_TopK[] = {FI("axis", "axis", -1), FI("largest", "largest", 1),
                                       FI("sorted", "sorted", 1)};
static const tio_rten_fmap f_HardSigmoid[] = {FF("alpha", "alpha", 0.2), FF("beta", "beta", 0.5)};
static const tio_rten_fmap f_Trilu[] = {FI("upper", "upper", 1)};
static const tio_rten_fmap f_ScatterND[] = {
    FE("reduction", "reduction", s_ScatterReduction, "none")};
/* NMSBoxOrder TopLeftBottomRight = 0, CenterWidthHeight = 1: ONNX's
 * center_point_box values. */
static const tio_rten_fmap f_NonMaxSuppression[] = {FI("box_order", "center_point_box", 0)};
static const tio_rten_fmap f_LayerNormalization[] = {FI("axis", "axis", -1),
                                                     FF("epsilon", "epsilon", 1e-5)};
static const tio_rten_fmap f_RandomUniform[] = {F("shape", "shape", INTS),
                                                FF("high", "high", 1.0), FF("low", "low", 0.0),
                                                F("seed", "seed", FLOAT)};
static const tio_rten_fmap f_Elu[] = {FF("alpha", "alpha", 1.0)};
static const tio_rten_fmap f_RandomUniformLike[] = {FF("high", "high", 1.0),
                                                    FF("low", "low", 0.0), F("seed", "seed", FLOAT)};
static const tio_rten_fmap f_RandomNormal[] = {FF("mean", "mean", 0.0), FF("scale", "scale", 1.0),
                                               F("seed", "seed", FLOAT), F("shape", "shape", INTS)};
static const tio_rten_fmap f_RandomNormalLike[] = {
    FF("mean", "mean", 0.0), FF("scale", "scale", 1.0), F("seed", "seed", FLOAT)};
static const tio_rten_fmap f_GatherND[] = {FI("batch_dims", "batch_dims", 0)};
static const tio_rten_fmap f_Gelu[] = {
    FE("approximate", "approximate", s_GeluApproximation, "none")};
static const tio_rten_fmap f_Einsum[] = {F("equation", "equation", STRING)};
static const tio_rten_fmap f_If[] = {F("then_branch", "then_branch", GRAPH),
                                     F("else_branch", "else_branch", GRAPH)};
static const tio_rten_fmap f_DequantizeLinear[] = {FI("axis", "axis", 1)};
static const tio_rten_fmap f_QuantizeLinear[] = {FI("axis", "axis", 1),
                                                 FT("output_dtype", "output_dtype")};
static const tio_rten_fmap f_DepthToSpace[] = {FE("mode", "mode", s_DepthToSpaceMode, "DCR"),
                                               F("block_size", "blocksize", INT)};
static const tio_rten_fmap f_Dropout[] = {F("seed", "seed", INT)};
static const tio_rten_fmap f_EyeLike[] = {FT("dtype", "dtype"), FI("k", "k", 0)};
static const tio_rten_fmap f_Loop[] = {F("body", "body", GRAPH)};
static const tio_rten_fmap f_SequenceEmpty[] = {FT("dtype", "dtype")};
static const tio_rten_fmap f_ConcatFromSequence[] = {F("axis", "axis", INT),
                                                     FI("new_axis", "new_axis", 0)};
static const tio_rten_fmap f_SplitToSequence[] = {FI("axis", "axis", 0),
                                                  FI("keep_dims", "keepdims", 1)};
static const tio_rten_fmap f_GridSample[] = {FI("align_corners", "align_corners", 0)};
static const tio_rten_fmap f_STFT[] = {FI("onesided", "onesided", 1)};
static const tio_rten_fmap f_Multinomial[] = {FI("sample_size", "sample_size", 1),
                                              F("seed", "seed", FLOAT)};
static const tio_rten_fmap f_ReverseSequence[] = {FI("batch_axis", "batch_axis", 1),
                                                  FI("time_axis", "time_axis", 0)};
static const tio_rten_fmap f_DFT[] = {FI("inverse", "inverse", 0), FI("onesided", "onesided", 0)};
static const tio_rten_fmap f_Upsample[] = {FE("mode", "mode", s_ResizeMode, "nearest")};
static const tio_rten_fmap f_RotaryEmbedding[] = {
    FI("interleaved", "interleaved", 0), FI("num_heads", "num_heads", 0),
    FI("rotary_embedding_dim", "rotary_embedding_dim", 0)};
static const tio_rten_fmap f_Attention[] = {
    FI("is_causal", "is_causal", 0), F("q_num_heads", "q_num_heads", INT),
    F("kv_num_heads", "kv_num_heads", INT), F("scale", "scale", FLOAT),
    FF("softcap", "softcap", 0.0)};
static const tio_rten_fmap f_LpNormalization[] = {FI("axis", "axis", -1), FI("p", "p", 2)};

/* ONNX attributes without an rten field that rten-convert accepts. */
static const tio_rten_extra x_ArgMax[] = {XI("select_last_index", 0)};
static const tio_rten_extra x_BatchNormalization[] = {XI("training_mode", 0), XIGN("momentum"),
                                                      XI("spatial", 1)};
static const tio_rten_extra x_Cast[] = {XI("saturate", 1)};
static const tio_rten_extra x_Conv[] = {XIGN("kernel_shape")}; /* from the weights */
static const tio_rten_extra x_MaxPool[] = {XI("storage_order", 0), XV("dilations", 1)};
static const tio_rten_extra x_LayerNormalization[] = {XI("stash_type", 1)};
static const tio_rten_extra x_IsInf[] = {XI("detect_positive", 1), XI("detect_negative", 1)};
static const tio_rten_extra x_GridSample[] = {XS("mode", "bilinear"),
                                              XS("padding_mode", "zeros")};
static const tio_rten_extra x_Resize[] = {XI("antialias", 0), XIGN("cubic_coeff_a"),
                                          XI("exclude_outside", 0), XF("extrapolation_value", 0.0),
                                          XS("keep_aspect_ratio_policy", "stretch")};
static const tio_rten_extra x_RNN[] = {XF("clip", 0.0), XI("layout", 0), XI("input_forget", 0)};
static const tio_rten_extra x_Random[] = {XI("dtype", 1)};
static const tio_rten_extra x_Multinomial[] = {XI("dtype", 6)};
static const tio_rten_extra x_Attention[] = {XIGN("qk_matmul_output_mode"),
                                             XIGN("softmax_precision")};

#define OP0(on) {.onnx = on}
#define OPF(on, tag, key) {.onnx = on, .attrs = tag, .fields = f_##key, .nfields = N(f_##key)}
#define OPX(on, tag, key, x)                                                                   \
    {.onnx = on, .attrs = tag, .fields = f_##key, .nfields = N(f_##key), .extra = x,            \
     .nextra = N(x)}

const tio_rten_opmap tio__rten_opmap[TIO_RTEN_OP_COUNT] = {
    [0] = OP0("Add"),
    [1] = OPX("ArgMin", 1, ArgMax, x_ArgMax),
    [2] = OPX("ArgMax", 1, ArgMax, x_ArgMax),
    [3] = OPF("AveragePool", 2, AveragePool),
    [4] = OPX("BatchNormalization", 3, BatchNormalization, x_BatchNormalization),
    [5] = OPX("Cast", 4, Cast, x_Cast),
    [6] = OP0("Clip"),
    [7] = OPF("Concat", 5, Concat),
    [8] = OPF("ConstantOfShape", 6, ConstantOfShape),
    [9] = OPX("Conv", 7, Conv, x_Conv),
    [10] = OPX("ConvTranspose", 8, ConvTranspose, x_Conv),
    [11] = OP0("Cos"),
    [12] = OPF("CumSum", 61, CumSum),
    [13] = OP0("Div"),
    [14] = OP0("Equal"),
    [15] = OP0("Erf"),
    [16] = OP0("Expand"),
    [17] = OPF("Flatten", 9, Flatten),
    [18] = OPF("Gather", 10, Gather),
    [19] = OPF("Gemm", 11, Gemm),
    [20] = OP0("GlobalAveragePool"),
    [21] = OP0("Greater"),
    [22] = OPX("GRU", 12, GRU, x_RNN),
    [23] = OP0("Identity"),
    [24] = OPF("LeakyRelu", 13, LeakyRelu),
    [25] = OP0("Less"),
    [26] = OP0("LessOrEqual"),
    [27] = OP0("Log"),
    [28] = OPF("LogSoftmax", 20, Softmax),
    [29] = OPX("LSTM", 14, LSTM, x_RNN),
    [30] = OP0("MatMul"),
    [31] = OPX("MaxPool", 15, MaxPool, x_MaxPool),
    [32] = OPF("Mod", 22, Mod),
    [33] = OP0("Mul"),
    [34] = OPF("Pad", 40, Pad),
    [35] = OP0("Pow"),
    [36] = OP0("Range"),
    [37] = OPF("ReduceMean", 16, ReduceMean),
    [38] = OPF("ReduceL2", 16, ReduceMean),
    [39] = OP0("Relu"),
    [40] = OPF("Reshape", 17, Reshape),
    [41] = OPX("Resize", 18, Resize, x_Resize),
    [42] = OPF("Shape", 45, Shape),
    [43] = OP0("Sigmoid"),
    [44] = OP0("Sin"),
    [45] = OP0("Slice"),
    [46] = OPF("Split", 19, Split),
    [47] = OP0("Sqrt"),
    [48] = OP0("Squeeze"),
    [49] = OPF("Softmax", 20, Softmax),
    [50] = OP0("Sub"),
    [51] = OP0("Tanh"),
    [52] = OPF("Transpose", 21, Transpose),
    [53] = OP0("Unsqueeze"),
    [54] = OP0("Where"),
    [55] = OPF("ReduceProd", 16, ReduceMean),
    [56] = OPF("ReduceSum", 16, ReduceMean),
    [57] = OPF("ReduceMin", 16, ReduceMean),
    [58] = OPF("ReduceMax", 16, ReduceMean),
    [59] = OP0("NonZero"),
    [60] = OPF("ScatterElements", 23, ScatterElements),
    [61] = OP0("Tile"),
    [62] = OP0("Not"),
    [63] = OP0("Abs"),
    [64] = OP0("Max"),
    [65] = OP0("Mean"),
    [66] = OP0("Min"),
    [67] = OP0("Sum"),
    [68] = OPF("OneHot", 24, OneHot),
    [69] = OP0("Round"),
    [70] = OP0("Floor"),
    [71] = OP0("Ceil"),
    [72] = OP0("Reciprocal"),
    [73] = OPF("TopK", 25, TopK),
    [74] = OP0("Neg"),
    [75] = OP0("Exp"),
    [76] = OP0("GreaterOrEqual"),
    [77] = OP0("Size"),
    [78] = OP0("Tan"),
    [79] = OP0("Acos"),
    [80] = OP0("Asin"),
    [81] = OP0("Atan"),
    [82] = OPF("InstanceNormalization", 3, BatchNormalization),
    [83] = OPF("HardSigmoid", 26, HardSigmoid),
    [84] = OP0("HardSwish"),
    [85] = OP0("And"),
    [86] = OP0("Or"),
    [87] = OP0("Xor"),
    [88] = OPF("Trilu", 27, Trilu),
    [89] = OPF("ScatterND", 28, ScatterND),
    [90] = OPF("NonMaxSuppression", 29, NonMaxSuppression),
    [91] = OP0("Sign"),
    [92] = OPF("GatherElements", 10, Gather),
    [93] = OPX("LayerNormalization", 30, LayerNormalization, x_LayerNormalization),
    [94] = OPF("ReduceSumSquare", 16, ReduceMean),
    [95] = OPX("RandomUniform", 31, RandomUniform, x_Random),
    [96] = OPF("Elu", 32, Elu),
    [97] = OPX("RandomUniformLike", 33, RandomUniformLike, x_Random),
    [98] = OPX("RandomNormal", 34, RandomNormal, x_Random),
    [99] = OPX("RandomNormalLike", 35, RandomNormalLike, x_Random),
    [100] = OP0("Softplus"),
    [101] = OPF("GatherND", 36, GatherND),
    [102] = OPF("Gelu", 37, Gelu),
    [103] = OPF("Einsum", 38, Einsum),
    [104] = OPF("If", 39, If),
    [105] = OPF("DequantizeLinear", 41, DequantizeLinear),
    [106] = OPF("QuantizeLinear", 42, QuantizeLinear),
    [107] = OP0("DynamicQuantizeLinear"),
    [108] = OP0("MatMulInteger"),
    [109] = OPF("DepthToSpace", 43, DepthToSpace),
    [110] = OPX("ConvInteger", 7, Conv, x_Conv),
    [111] = {.onnx = "CastLike", .attrs = 44},
    [112] = OPF("Dropout", 46, Dropout),
    [113] = OPF("EyeLike", 47, EyeLike),
    [114] = OP0("IsNaN"),
    [115] = {.onnx = "IsInf", .attrs = 48, .extra = x_IsInf, .nextra = N(x_IsInf)},
    [116] = OPF("Loop", 49, Loop),
    [117] = OPF("SequenceEmpty", 50, SequenceEmpty),
    [118] = OP0("SequenceAt"),
    [119] = OP0("SequenceInsert"),
    [120] = OPF("ConcatFromSequence", 51, ConcatFromSequence),
    [121] = OPF("SplitToSequence", 52, SplitToSequence),
    [122] = OP0("SequenceLength"),
    [123] = OP0("SequenceConstruct"),
    [124] = OP0("SequenceErase"),
    [125] = OPX("GridSample", 53, GridSample, x_GridSample),
    [126] = OP0("PRelu"),
    [127] = OPF("STFT", 54, STFT),
    [128] = OP0("GlobalMaxPool"),
    [129] = OPF("ReduceL1", 16, ReduceMean),
    [130] = OP0("Acosh"),
    [131] = OP0("Asinh"),
    [132] = OP0("Atanh"),
    [133] = OP0("Cosh"),
    [134] = OP0("Sinh"),
    [135] = OPX("Multinomial", 55, Multinomial, x_Multinomial),
    [136] = OPF("ReverseSequence", 56, ReverseSequence),
    [137] = OPF("DFT", 57, DFT),
    [138] = OPF("Scatter", 23, Scatter),
    [139] = OPF("Upsample", 58, Upsample),
    [140] = OPF("RotaryEmbedding", 59, RotaryEmbedding),
    [141] = OPX("Attention", 60, Attention, x_Attention),
    [142] = OPF("LpNormalization", 62, LpNormalization),
    [143] = OPF("ReduceLogSum", 16, ReduceMean),
    [144] = OPF("ReduceLogSumExp", 16, ReduceMean),
};

const tio_rten_fmap *tio__rten_fmap_field(const tio_rten_opmap *op, const char *field) {
    for (unsigned k = 0; k < op->nfields; k++)
        if (op->fields[k].field && strcmp(op->fields[k].field, field) == 0) return &op->fields[k];
    return NULL;
}

/* rten-convert's generate_input_from_attr calls (converter.py): Clip min/max
 * (attributes before opset 11), DFT axis (before 20), Dropout ratio (before
 * 12), Reshape shape (before 5), Slice starts/ends/axes (before 10), Split
 * split (before 13), Squeeze/Unsqueeze axes (before 13), TopK k (before 10),
 * Upsample scales (opset 7). The Reduce* ops keep `axes` as an rten field. */
const tio_rten_attr_input tio__rten_attr_inputs[] = {
    {"Clip", "min", TIO_ATTR_FLOAT, 1},      {"Clip", "max", TIO_ATTR_FLOAT, 2},
    {"DFT", "axis", TIO_ATTR_INT, 2},        {"Dropout", "ratio", TIO_ATTR_FLOAT, 1},
    {"Reshape", "shape", TIO_ATTR_INTS, 1},  {"Slice", "starts", TIO_ATTR_INTS, 1},
    {"Slice", "ends", TIO_ATTR_INTS, 2},     {"Slice", "axes", TIO_ATTR_INTS, 3},
    {"Split", "split", TIO_ATTR_INTS, 1},    {"Squeeze", "axes", TIO_ATTR_INTS, 1},
    {"TopK", "k", TIO_ATTR_INT, 1},          {"Unsqueeze", "axes", TIO_ATTR_INTS, 1},
    {"Upsample", "scales", TIO_ATTR_FLOATS, 1}};
const size_t tio__rten_attr_input_count = N(tio__rten_attr_inputs);

const tio_rten_fmap *tio__rten_fmap_onnx(const tio_rten_opmap *op, const char *name) {
    for (unsigned k = 0; k < op->nfields; k++)
        if (op->fields[k].onnx && strcmp(op->fields[k].onnx, name) == 0) return &op->fields[k];
    return NULL;
}

/* rten DataType (Int32, Float, Int8, UInt8) -> TensorProto.DataType
 * (INT32 = 6, FLOAT = 1, INT8 = 3, UINT8 = 2). */
int64_t tio__rten_dtype_to_onnx(int64_t v) {
    static const int64_t onnx[] = {6, 1, 3, 2};
    return v >= 0 && v < 4 ? onnx[v] : -1;
}

/* As rten-convert's convert_data_type: BOOL (9), INT32, INT64 (7) -> Int32;
 * FLOAT16 (10), DOUBLE (11) -> Float. */
int64_t tio__rten_dtype_from_onnx(int64_t onnx) {
    switch (onnx) {
    case 1:
    case 10:
    case 11: return RTEN_DataType_Float;
    case 6:
    case 7:
    case 9: return RTEN_DataType_Int32;
    case 3: return RTEN_DataType_Int8;
    case 2: return RTEN_DataType_UInt8;
    default: return -1;
    }
}
