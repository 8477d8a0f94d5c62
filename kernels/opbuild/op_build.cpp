// cannbuild sandbox: an emulation of the toolkit's op_build (tools/opbuild/op_build), which is
// closed source.  The ops repositories build their operator definitions (op_host/*_def.cpp,
// OP_ADD) into a shared library and run
//   OPS_PROTO_SEPARATE=1 OPS_PROJECT_NAME=<aclnn|aclnnInner|aclnnExc> OPS_ACLNN_GEN=<0|1>
//   OPS_PRODUCT_NAME="<soc>;..." op_build <library> <out dir>
// (ops-transformer@v9.0.0 cmake/custom_build.cmake:814-866, cmake/opbuild.cmake).  This program
// loads the library, whose registrations land in the toolkit's libregister (compiled by the
// sandbox from the release's own OpDef sources: hicann/ge@v9.0.0 graph_metadef/register/opdef,
// metadef from 9.1), walks every registered OpDef through the accessors the real generators
// use (ops::Generator is a friend of the OpDef classes in register/op_def.h), and writes per
// operator, named after the snake_case of its type (the def source's name with `_def` stripped,
// which is what the CMake rules expect):
//   <out>/<aclnn|aclnnInner>_<op>.h/.cpp   when OPS_ACLNN_GEN=1
//   <out>/<op>_proto.h/.cpp                the operator prototype (REG_OP)
//   <out>/aic-<soc>-ops-info.ini           per SoC of OPS_PRODUCT_NAME the op has a config for
// The real output formats are not public.  What is written is what the consumers need: the
// aclnn header declares the two-phase C API with the types and order op_api calls it with
// (e.g. attention/fused_infer_attention_score/op_host/op_api/aclnn_fused_infer_attention_score.cpp);
// the .cpp has no launch (the real one launches through nnopbase) and returns ACLNN_ERR_INNER,
// saying so; the ini holds the keys cmake/scripts/util/opdesc_parser.py reads.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "register/op_def.h"
#include "register/op_def_factory.h"

namespace {
const char *DtypeName(ge::DataType t) {
  switch (t) {  // the names of ascendc_impl_build.py's DTYPE_MAP
#define NAME(dt, name) \
  case ge::dt:         \
    return name;
    NAME(DT_FLOAT, "float32") NAME(DT_FLOAT16, "float16") NAME(DT_BF16, "bfloat16")
    NAME(DT_INT8, "int8") NAME(DT_INT16, "int16") NAME(DT_INT32, "int32") NAME(DT_INT64, "int64")
    NAME(DT_UINT8, "uint8") NAME(DT_UINT16, "uint16") NAME(DT_UINT32, "uint32")
    NAME(DT_UINT64, "uint64") NAME(DT_BOOL, "bool") NAME(DT_DOUBLE, "double")
    NAME(DT_STRING, "string") NAME(DT_COMPLEX32, "complex32") NAME(DT_COMPLEX64, "complex64")
    NAME(DT_COMPLEX128, "complex128") NAME(DT_INT4, "int4") NAME(DT_INT2, "int2")
    NAME(DT_UINT1, "uint1") NAME(DT_HIFLOAT8, "hifloat8") NAME(DT_FLOAT8_E5M2, "float8_e5m2")
    NAME(DT_FLOAT8_E4M3FN, "float8_e4m3fn") NAME(DT_FLOAT8_E8M0, "float8_e8m0")
    NAME(DT_FLOAT4_E2M1, "float4_e2m1") NAME(DT_FLOAT4_E1M2, "float4_e1m2")
    NAME(DT_QINT8, "qint8") NAME(DT_QINT16, "qint16") NAME(DT_QINT32, "qint32")
    NAME(DT_QUINT8, "quint8") NAME(DT_QUINT16, "quint16") NAME(DT_RESOURCE, "resource")
    NAME(DT_STRING_REF, "string_ref") NAME(DT_DUAL, "dual")
#undef NAME
    default:
      return "undefined";
  }
}

std::string DtypeEnum(ge::DataType t) {  // DT_FLOAT16 for REG_OP's TensorType
  std::string name = DtypeName(t);
  static const std::map<std::string, std::string> special = {{"float32", "DT_FLOAT"}, {"bfloat16", "DT_BF16"}};
  auto it = special.find(name);
  if (it != special.end()) return it->second;
  std::string upper = "DT_";
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

const char *FormatName(ge::Format f) {
  switch (static_cast<int>(f)) {
#define NAME(fmt) \
  case ge::fmt:   \
    return &#fmt[7];  // FORMAT_ND -> ND
    NAME(FORMAT_NCHW) NAME(FORMAT_NHWC) NAME(FORMAT_ND) NAME(FORMAT_NC1HWC0) NAME(FORMAT_FRACTAL_Z)
    NAME(FORMAT_HWCN) NAME(FORMAT_NDHWC) NAME(FORMAT_FRACTAL_NZ) NAME(FORMAT_NCDHW) NAME(FORMAT_DHWCN)
    NAME(FORMAT_NDC1HWC0) NAME(FORMAT_FRACTAL_Z_3D) NAME(FORMAT_NC) NAME(FORMAT_NCL) NAME(FORMAT_CN)
    NAME(FORMAT_FRACTAL_ZN_RNN) NAME(FORMAT_ND_RNN_BIAS) NAME(FORMAT_C1HWNC0) NAME(FORMAT_FRACTAL_NZ_C0_16)
    NAME(FORMAT_FRACTAL_NZ_C0_32) NAME(FORMAT_FRACTAL_NZ_C0_2) NAME(FORMAT_FRACTAL_NZ_C0_4)
    NAME(FORMAT_FRACTAL_NZ_C0_8) NAME(FORMAT_NC1HWC0_C04) NAME(FORMAT_FRACTAL_Z_C04)
#undef NAME
    default:
      return "ND";
  }
}

std::string Snake(const std::string &type) {  // FlashAttentionScore -> flash_attention_score
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(type[i]);
    if (std::isupper(c) && i > 0) {
      const unsigned char prev = static_cast<unsigned char>(type[i - 1]);
      const bool next_lower = i + 1 < type.size() && std::islower(static_cast<unsigned char>(type[i + 1]));
      if (std::islower(prev) || std::isdigit(prev) || (std::isupper(prev) && next_lower)) out += '_';
    }
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

std::string Camel(const std::string &name) {  // real_shift -> realShift
  std::string out;
  bool up = false;
  for (char c : name) {
    if (c == '_') {
      up = !out.empty();
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

std::string Upper(std::string s) {
  for (auto &c : s) c = std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(static_cast<unsigned char>(c)) : '_';
  return s;
}

bool WriteFile(const std::string &path, const std::string &text) {
  // written aside and renamed: a make that is interrupted never sees half a file
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

struct Param {
  std::string name;
  ops::Option type;
  std::vector<ge::DataType> dtypes;
  std::vector<ge::Format> formats;
  std::string value_depend;
};

struct Attr {
  std::string name, cfg_type, proto_type, default_value, proto_default;
  bool required;
};

struct Config {
  std::vector<Param> inputs, outputs;
  std::vector<std::pair<std::string, std::string>> cfg;  // in the order the def set them
};

struct Op {
  std::string type;
  std::vector<Param> inputs, outputs;
  std::vector<Attr> attrs;
  std::map<std::string, Config> configs;  // SoC -> its AI Core config
};
}  // namespace

namespace ops {
// The real generators are friends of the OpDef classes (register/op_def.h); so is this one.
class Generator {
 public:
  static std::vector<std::string> Registered() {
    std::vector<std::string> names;
    for (auto &name : OpDefFactory::GetAllOp()) names.emplace_back(name.GetString());
    return names;
  }

  static Op Read(const std::string &type) {
    OpDef def = OpDefFactory::OpDefCreate(type.c_str());
    Op op;
    op.type = def.GetOpType().GetString();
    op.inputs = Params(def.GetInputs());
    op.outputs = Params(def.GetOutputs());
    for (auto &attr : def.GetAttrs()) {
      Attr a;
      a.name = attr.GetName().GetString();
      a.cfg_type = attr.GetCfgDataType().GetString();
      a.proto_type = attr.GetProtoDataType().GetString();
      a.required = attr.IsRequired();
      a.default_value = attr.GetAttrDefaultVal("[]").GetString();
      a.proto_default = attr.GetAttrDefaultVal("{}").GetString();
      op.attrs.push_back(a);
    }
    for (auto &entry : def.AICore().GetAICoreConfigs()) {
      Config config;
      config.inputs = Params(def.GetMergeInputs(entry.second));
      config.outputs = Params(def.GetMergeOutputs(entry.second));
      auto &info = entry.second.GetCfgInfo();
      for (auto &key : entry.second.GetCfgKeys()) {
        auto it = info.find(key);
        if (it != info.end()) config.cfg.emplace_back(key.GetString(), it->second.GetString());
      }
      op.configs[entry.first.GetString()] = config;
    }
    return op;
  }

 private:
  static std::vector<Param> Params(std::vector<OpParamDef> defs) {
    std::vector<Param> params;
    for (auto &def : defs) {
      Param p;
      p.name = def.GetParamName().GetString();
      p.type = def.GetParamType();
      p.dtypes = def.GetDataTypes();
      p.formats = def.GetFormats();
      p.value_depend = def.GetValueDepend().GetString();
      params.push_back(p);
    }
    return params;
  }
};
}  // namespace ops

namespace {
const char *ParamTypeName(ops::Option type) {
  switch (type) {
    case ops::Option::OPTIONAL:
      return "optional";
    case ops::Option::DYNAMIC:
      return "dynamic";
    default:
      return "required";
  }
}

template <class T, class F>
std::string Join(const std::vector<T> &items, F name) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + std::string(name(items[i]));
  return out;
}

void IniParams(std::ostringstream &out, const char *kind, const std::vector<Param> &params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Param &p = params[i];
    out << kind << i << ".name=" << p.name << "\n";
    out << kind << i << ".dtype=" << Join(p.dtypes, DtypeName) << "\n";
    out << kind << i << ".format=" << Join(p.formats, FormatName) << "\n";
    out << kind << i << ".paramType=" << ParamTypeName(p.type) << "\n";
    out << kind << i << ".shape=all\n";
    if (!p.value_depend.empty()) out << kind << i << ".valueDepend=" << p.value_depend << "\n";
  }
}

std::string Ini(const std::vector<Op> &ops, const std::string &soc) {
  std::ostringstream out;
  for (const Op &op : ops) {
    auto it = op.configs.find(soc);
    if (it == op.configs.end()) continue;
    const Config &config = it->second;
    out << "[" << op.type << "]\n";
    IniParams(out, "input", config.inputs);
    IniParams(out, "output", config.outputs);
    if (!op.attrs.empty()) {
      out << "attr.list=" << Join(op.attrs, [](const Attr &a) { return a.name; }) << "\n";
      for (const Attr &a : op.attrs) {
        out << "attr_" << a.name << ".type=" << a.cfg_type << "\n";
        out << "attr_" << a.name << ".value=all\n";
        out << "attr_" << a.name << ".paramType=" << (a.required ? "required" : "optional") << "\n";
        if (!a.required) out << "attr_" << a.name << ".defaultValue=" << a.default_value << "\n";
      }
    }
    bool has_file = false;
    for (auto &kv : config.cfg) {
      out << kv.first << "=" << kv.second << "\n";
      has_file = has_file || kv.first == "opFile.value";
    }
    if (!has_file) out << "opFile.value=" << Snake(op.type) << "\n";
    out << "opInterface.value=" << Snake(op.type) << "\n";
  }
  return out.str();
}

std::string Proto(const Op &op) {
  const std::string guard = "OPS_BUILT_IN_OP_PROTO_INC_" + Upper(Snake(op.type)) + "_PROTO_H_";
  std::ostringstream out;
  out << "// the operator prototype of " << op.type << ", written by the cannbuild sandbox's op_build\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n#include \"graph/operator_reg.h\"\n\nnamespace ge {\n"
      << "REG_OP(" << op.type << ")\n";
  auto params = [&out](const std::vector<Param> &ps, const char *in) {
    for (const Param &p : ps) {
      std::set<ge::DataType> seen;
      std::vector<std::string> types;
      for (auto t : p.dtypes)
        if (seen.insert(t).second) types.push_back(DtypeEnum(t));
      const std::string kind = p.type == ops::Option::OPTIONAL ? std::string("OPTIONAL_") + in
                               : p.type == ops::Option::DYNAMIC ? std::string("DYNAMIC_") + in
                                                                 : std::string(in);
      out << "    ." << kind << "(" << p.name << ", TensorType({" << Join(types, [](const std::string &s) { return s; })
          << "}))\n";
    }
  };
  params(op.inputs, "INPUT");
  params(op.outputs, "OUTPUT");
  for (const Attr &a : op.attrs) {
    if (a.required) {
      out << "    .REQUIRED_ATTR(" << a.name << ", " << a.proto_type << ")\n";
    } else if (a.proto_type == "String") {
      out << "    .ATTR(" << a.name << ", String, \"" << a.proto_default << "\")\n";
    } else {
      out << "    .ATTR(" << a.name << ", " << a.proto_type << ", " << a.proto_default << ")\n";
    }
  }
  out << "    .OP_END_FACTORY_REG(" << op.type << ");\n}  // namespace ge\n#endif\n";
  return out.str();
}

bool AllOf(const std::vector<ge::DataType> &types, std::initializer_list<ge::DataType> allowed) {
  return !types.empty() && std::all_of(types.begin(), types.end(), [&](ge::DataType t) {
    return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
  });
}

std::string InputType(const Param &p) {
  if (p.type == ops::Option::DYNAMIC) return "const aclTensorList *";
  if (!p.value_depend.empty()) {  // a host-side value: op_api passes it as an array
    if (AllOf(p.dtypes, {ge::DT_INT64, ge::DT_INT32})) return "const aclIntArray *";
    if (AllOf(p.dtypes, {ge::DT_FLOAT, ge::DT_FLOAT16})) return "const aclFloatArray *";
    if (AllOf(p.dtypes, {ge::DT_BOOL})) return "const aclBoolArray *";
  }
  return "const aclTensor *";
}

std::string AttrType(const Attr &a) {
  static const std::map<std::string, std::string> types = {
      {"bool", "bool "},  {"float", "double "}, {"int", "int64_t "}, {"str", "char *"},
      {"listBool", "const aclBoolArray *"}, {"listFloat", "const aclFloatArray *"},
      {"listInt", "const aclIntArray *"}, {"listListInt", "const aclIntArray *"}};
  auto it = types.find(a.cfg_type);
  return it == types.end() ? "int64_t " : it->second;
}

std::string Signature(const Op &op, const std::string &fn) {
  std::vector<std::string> args;
  std::set<std::string> inputs;
  for (const Param &p : op.inputs) {
    inputs.insert(p.name);
    args.push_back(InputType(p) + Camel(p.name) + (p.type == ops::Option::OPTIONAL ? "Optional" : ""));
  }
  for (const Attr &a : op.attrs) args.push_back(AttrType(a) + Camel(a.name) + (a.required ? "" : "Optional"));
  for (const Param &p : op.outputs) {
    const std::string type = p.type == ops::Option::DYNAMIC ? "const aclTensorList *" : "const aclTensor *";
    args.push_back(type + Camel(p.name) + (inputs.count(p.name) ? "Ref" : "Out"));
  }
  args.push_back("uint64_t *workspaceSize");
  args.push_back("aclOpExecutor **executor");
  std::string out = "aclnnStatus " + fn + "GetWorkspaceSize(";
  for (size_t i = 0; i < args.size(); ++i) out += std::string(i ? ",\n    " : "\n    ") + args[i];
  return out + ")";
}

const char *kLaunch =
    "aclnnStatus %sGetWorkspaceSize(...) and %s(...) are declared from the operator definition;\n"
    "// the real op_build also generates their launch through nnopbase, which the sandbox does not.\n";

void AclnnFiles(const Op &op, const std::string &dir, const std::string &project, std::vector<std::string> &failed) {
  const bool inner = project == "aclnnInner";
  const std::string file = std::string(inner ? "aclnnInner_" : "aclnn_") + Snake(op.type);
  const std::string fn = std::string(inner ? "aclnnInner" : "aclnn") + op.type;
  const std::string guard = "CANNBUILD_GENERATED_" + Upper(file) + "_H_";
  const std::string run = "aclnnStatus " + fn +
                          "(\n    void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)";
  char note[512];
  std::snprintf(note, sizeof note, kLaunch, fn.c_str(), fn.c_str());
  std::ostringstream h;
  h << "// " << note << "#ifndef " << guard << "\n#define " << guard << "\n\n#include \"aclnn/aclnn_base.h\"\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "__attribute__((visibility(\"default\")))\n" << Signature(op, fn) << ";\n\n"
    << "__attribute__((visibility(\"default\")))\n" << run << ";\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  std::ostringstream cpp;
  cpp << "// " << note << "#include <cstdio>\n#include \"" << file << ".h\"\n\n"
      << "#pragma GCC diagnostic ignored \"-Wunused-parameter\"  // no launch uses them\n\n"
      << "namespace {\naclnnStatus NotLaunched(const char *what)\n{\n"
      << "    std::fprintf(stderr, \"%s: the cannbuild sandbox's op_build generated no launch for it\\n\", what);\n"
      << "    return 561000;  // ACLNN_ERR_INNER\n}\n}  // namespace\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << Signature(op, fn) << "\n{\n    return NotLaunched(\"" << fn << "GetWorkspaceSize\");\n}\n\n"
      << run << "\n{\n    return NotLaunched(\"" << fn << "\");\n}\n\n"
      << "#ifdef __cplusplus\n}\n#endif\n";
  for (auto &f : {std::make_pair(file + ".h", h.str()), std::make_pair(file + ".cpp", cpp.str())})
    if (!WriteFile(dir + "/" + f.first, f.second)) failed.push_back(dir + "/" + f.first);
}

std::vector<std::string> Socs(const char *product, const std::vector<Op> &ops) {
  std::vector<std::string> socs;
  std::string text = product ? product : "";
  text.erase(std::remove(text.begin(), text.end(), '"'), text.end());
  std::stringstream in(text);
  for (std::string soc; std::getline(in, soc, ';');)
    if (!soc.empty()) socs.push_back(soc);
  if (socs.empty())  // no product named: every SoC a definition has a config for
    for (const Op &op : ops)
      for (auto &c : op.configs)
        if (std::find(socs.begin(), socs.end(), c.first) == socs.end()) socs.push_back(c.first);
  return socs;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[3]) == "--aicpu") {
    // ops-math 9.1.0 cmake/opbuild.cmake:250-262 (gen_aicpu_ini_from_opdef): the AICPU
    // operators' ini and json, a format no open repository shows: a named wall
    std::fprintf(stderr,
                 "cannbuild sandbox wall: op_build (its --aicpu mode, the AICPU operators' ini and json): "
                 "the sandbox's op_build writes only what the AI Core operators' build reads\n");
    return 1;
  }
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: op_build <operator definition library> <output folder>\n"
                 "(the cannbuild sandbox's emulation of op_build; environment OPS_PROJECT_NAME, "
                 "OPS_ACLNN_GEN, OPS_PRODUCT_NAME, OPS_PROTO_SEPARATE)\n");
    return 2;
  }
  const std::string library = argv[1], out = argv[2];
  if (dlopen(library.c_str(), RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "op_build (cannbuild sandbox): cannot load %s: %s\n", library.c_str(), dlerror());
    return 1;
  }
  std::vector<Op> ops;
  for (auto &name : ops::Generator::Registered()) ops.push_back(ops::Generator::Read(name));
  if (ops.empty()) {
    std::fprintf(stderr,
                 "op_build (cannbuild sandbox): %s registers no operator definition: no OP_ADD ran when it "
                 "was loaded (are its op_host/*_def.cpp sources compiled into it, linked to the toolkit's "
                 "libregister?)\n",
                 library.c_str());
    return 1;
  }
  mkdir(out.c_str(), 0755);
  const char *project = std::getenv("OPS_PROJECT_NAME");
  const char *gen = std::getenv("OPS_ACLNN_GEN");
  std::vector<std::string> failed;
  for (const Op &op : ops) {
    if (gen != nullptr && std::string(gen) == "1") AclnnFiles(op, out, project ? project : "aclnn", failed);
    const std::string stem = out + "/" + Snake(op.type) + "_proto";
    if (!WriteFile(stem + ".h", Proto(op))) failed.push_back(stem + ".h");
    if (!WriteFile(stem + ".cpp", "#include \"" + Snake(op.type) + "_proto.h\"\n")) failed.push_back(stem + ".cpp");
  }
  for (const std::string &soc : Socs(std::getenv("OPS_PRODUCT_NAME"), ops)) {
    const std::string ini = Ini(ops, soc);
    const std::string path = out + "/aic-" + soc + "-ops-info.ini";
    if (!ini.empty() && !WriteFile(path, ini)) failed.push_back(path);
  }
  for (const std::string &path : failed) std::fprintf(stderr, "op_build (cannbuild sandbox): cannot write %s\n", path.c_str());
  if (!failed.empty()) return 1;
  std::printf("op_build (cannbuild sandbox): %zu operator(s) of %s into %s\n", ops.size(), library.c_str(), out.c_str());
  return 0;
}
