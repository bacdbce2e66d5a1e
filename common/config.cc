#include "common/config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/struct.pb.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace roboloop {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Walks a YAML tree alongside a proto descriptor, filling the message through reflection.
class YamlProtoParser {
 public:
  explicit YamlProtoParser(std::string source) : source_(std::move(source)) {}

  absl::Status ParseMessage(const YAML::Node& node, Message* message) {
    const Descriptor* descriptor = message->GetDescriptor();
    if (descriptor->full_name() == "google.protobuf.Struct") return ParseStruct(node, message);
    if (descriptor->full_name() == "google.protobuf.Value") return ParseValue(node, message);
    if (descriptor->full_name() == "google.protobuf.ListValue") return ParseList(node, message);
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) {
      return Error(node, absl::StrCat("expected a mapping for ", descriptor->name()));
    }
    std::map<const FieldDescriptor*, YAML::Mark> seen;  // where each field was first given
    for (const auto& entry : node) {
      std::string key = entry.first.as<std::string>();
      const FieldDescriptor* field = FindField(descriptor, key);
      if (field != nullptr && !seen.emplace(field, entry.first.Mark()).second) {
        Note(Error(entry.first, absl::StrCat("duplicate key '", key, "' (", field->name(), " was given at line ",
                                             seen[field].line + 1, ")")));
        continue;
      }
      Note(field == nullptr ? UnknownKey(entry.first, key, descriptor) : ParseField(entry.second, field, message));
    }
    return absl::OkStatus();
  }

  // Every problem noted so far, one line each, as one error; OK when there is none.
  absl::Status Problems() const {
    if (problems_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
  }

 private:
  static const FieldDescriptor* FindField(const Descriptor* descriptor, const std::string& key) {
    const FieldDescriptor* field = descriptor->FindFieldByName(key);
    if (field == nullptr) field = descriptor->FindFieldByCamelcaseName(key);
    return field;
  }

  absl::Status UnknownKey(const YAML::Node& at, const std::string& key,
                          const Descriptor* descriptor) const {
    std::vector<std::string> known;
    for (int i = 0; i < descriptor->field_count(); ++i) known.push_back(descriptor->field(i)->name());
    return Error(at, absl::StrCat("unknown key '", key, "' in ", descriptor->name(),
                                  " (known: ", absl::StrJoin(known, ", "), ")"));
  }

  // Keeps the problem `status` reports (if any), so that parsing goes on to find the others.
  void Note(const absl::Status& status) {
    if (!status.ok()) problems_.emplace_back(status.message());
  }

  absl::Status Error(const YAML::Node& node, const std::string& what) const {
    YAML::Mark mark = node.Mark();
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", mark.line + 1, ":", mark.column + 1, ": ", what));
  }

  absl::Status ParseField(const YAML::Node& node, const FieldDescriptor* field, Message* message) {
    if (field->is_map()) return ParseMap(node, field, message);
    if (field->is_repeated()) {
      if (node.IsNull()) return absl::OkStatus();
      if (!node.IsSequence()) {
        return Error(node, absl::StrCat("field '", field->name(), "' expects a list"));
      }
      for (const auto& item : node) ROBOLOOP_RETURN_IF_ERROR(SetScalarOrMessage(item, field, message));
      return absl::OkStatus();
    }
    return SetScalarOrMessage(node, field, message);
  }

  // The first key the mapping `node` gives twice, as an error at its second place; OK when none is.
  absl::Status CheckUniqueKeys(const YAML::Node& node) const {
    std::map<std::string, YAML::Mark> seen;  // where each key was first given
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      if (!seen.emplace(key, entry.first.Mark()).second) {
        return Error(entry.first, absl::StrCat("duplicate key '", key, "' (given at line ", seen[key].line + 1, ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseMap(const YAML::Node& node, const FieldDescriptor* field, Message* message) {
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) return Error(node, absl::StrCat("field '", field->name(), "' expects a mapping"));
    ROBOLOOP_RETURN_IF_ERROR(CheckUniqueKeys(node));
    const Reflection* reflection = message->GetReflection();
    const FieldDescriptor* key_field = field->message_type()->FindFieldByName("key");
    const FieldDescriptor* value_field = field->message_type()->FindFieldByName("value");
    for (const auto& entry : node) {
      Message* item = reflection->AddMessage(message, field);
      ROBOLOOP_RETURN_IF_ERROR(SetScalarOrMessage(entry.first, key_field, item));
      ROBOLOOP_RETURN_IF_ERROR(SetScalarOrMessage(entry.second, value_field, item));
    }
    return absl::OkStatus();
  }

  absl::Status SetScalarOrMessage(const YAML::Node& node, const FieldDescriptor* field,
                                  Message* message) {
    const Reflection* reflection = message->GetReflection();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Message* child = field->is_repeated() ? reflection->AddMessage(message, field)
                                            : reflection->MutableMessage(message, field);
      return ParseMessage(node, child);
    }
    if (!node.IsScalar()) {
      return Error(node, absl::StrCat("field '", field->name(), "' expects a ",
                                      field->cpp_type_name(), " value"));
    }
    return SetScalar(node, field, message);
  }

  template <typename T>
  absl::Status ParseNumber(const YAML::Node& node, const FieldDescriptor* field, T* out) const {
    const std::string text = node.Scalar();
    bool ok = false;
    if constexpr (std::is_same_v<T, double>) {
      ok = absl::SimpleAtod(text, out);
    } else if constexpr (std::is_same_v<T, float>) {
      ok = absl::SimpleAtof(text, out);
    } else {
      ok = absl::SimpleAtoi(text, out);
    }
    if (!ok) {
      return Error(node, absl::StrCat("field '", field->name(), "' expects a ",
                                      field->cpp_type_name(), ", got '", text, "'"));
    }
    return absl::OkStatus();
  }

  absl::Status SetScalar(const YAML::Node& node, const FieldDescriptor* field, Message* message) {
    const Reflection* r = message->GetReflection();
    const bool rep = field->is_repeated();
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string v = node.Scalar();
        rep ? r->AddString(message, field, v) : r->SetString(message, field, v);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        std::string text = absl::AsciiStrToLower(node.Scalar());
        bool v;
        if (!absl::SimpleAtob(text, &v)) {
          return Error(node, absl::StrCat("field '", field->name(), "' expects true or false, got '",
                                          node.Scalar(), "'"));
        }
        rep ? r->AddBool(message, field, v) : r->SetBool(message, field, v);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* value = field->enum_type()->FindValueByName(node.Scalar());
        if (value == nullptr) {
          std::vector<std::string> names;
          for (int i = 0; i < field->enum_type()->value_count(); ++i) {
            names.push_back(field->enum_type()->value(i)->name());
          }
          return Error(node, absl::StrCat("field '", field->name(), "': '", node.Scalar(),
                                          "' is not one of ", absl::StrJoin(names, ", ")));
        }
        rep ? r->AddEnum(message, field, value) : r->SetEnum(message, field, value);
        return absl::OkStatus();
      }
      default:
        return SetNumber(node, field, message);
    }
  }

  absl::Status SetNumber(const YAML::Node& node, const FieldDescriptor* field, Message* message) {
    const Reflection* r = message->GetReflection();
    const bool rep = field->is_repeated();
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v;
        ROBOLOOP_RETURN_IF_ERROR(ParseNumber(node, field, &v));
        rep ? r->AddInt32(message, field, v) : r->SetInt32(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v;
        ROBOLOOP_RETURN_IF_ERROR(ParseNumber(node, field, &v));
        rep ? r->AddInt64(message, field, v) : r->SetInt64(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t v;
        ROBOLOOP_RETURN_IF_ERROR(ParseNumber(node, field, &v));
        rep ? r->AddUInt32(message, field, v) : r->SetUInt32(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v;
        ROBOLOOP_RETURN_IF_ERROR(ParseNumber(node, field, &v));
        rep ? r->AddUInt64(message, field, v) : r->SetUInt64(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double v;
        ROBOLOOP_RETURN_IF_ERROR(ParseNumber(node, field, &v));
        rep ? r->AddDouble(message, field, v) : r->SetDouble(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_FLOAT: {
        float v;
        ROBOLOOP_RETURN_IF_ERROR(ParseNumber(node, field, &v));
        rep ? r->AddFloat(message, field, v) : r->SetFloat(message, field, v);
        break;
      }
      default:
        return Error(node, absl::StrCat("field '", field->name(), "' has an unsupported type"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseStruct(const YAML::Node& node, Message* message) {
    auto* s = static_cast<google::protobuf::Struct*>(message);
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) return Error(node, "expected a mapping");
    ROBOLOOP_RETURN_IF_ERROR(CheckUniqueKeys(node));
    for (const auto& entry : node) {
      google::protobuf::Value& value = (*s->mutable_fields())[entry.first.as<std::string>()];
      ROBOLOOP_RETURN_IF_ERROR(ParseValue(entry.second, &value));
    }
    return absl::OkStatus();
  }

  absl::Status ParseList(const YAML::Node& node, Message* message) {
    auto* list = static_cast<google::protobuf::ListValue*>(message);
    if (!node.IsSequence()) return Error(node, "expected a list");
    for (const auto& item : node) ROBOLOOP_RETURN_IF_ERROR(ParseValue(item, list->add_values()));
    return absl::OkStatus();
  }

  absl::Status ParseValue(const YAML::Node& node, Message* message) {
    auto* value = static_cast<google::protobuf::Value*>(message);
    if (node.IsNull()) {
      value->set_null_value(google::protobuf::NULL_VALUE);
    } else if (node.IsMap()) {
      return ParseStruct(node, value->mutable_struct_value());
    } else if (node.IsSequence()) {
      return ParseList(node, value->mutable_list_value());
    } else {
      SetScalarValue(node, value);
    }
    return absl::OkStatus();
  }

  static void SetScalarValue(const YAML::Node& node, google::protobuf::Value* value) {
    const std::string& text = node.Scalar();
    double number;
    bool flag;
    // A quoted scalar stays a string; plain scalars become numbers or booleans when they read as one.
    if (node.Tag() != "!" && absl::SimpleAtod(text, &number)) {
      value->set_number_value(number);
    } else if (node.Tag() != "!" && absl::SimpleAtob(absl::AsciiStrToLower(text), &flag) &&
               !absl::SimpleAtod(text, &number)) {
      value->set_bool_value(flag);
    } else {
      value->set_string_value(text);
    }
  }

  std::string source_;
  std::vector<std::string> problems_;
};

// Offset of the first byte of `text` that is not part of well-formed UTF-8 (no overlong forms,
// surrogates or code points past U+10FFFF), or npos when all of it is.
size_t FirstInvalidUtf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;   // overlong
      if (lead == 0xED) high = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;   // overlong
      if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char c = byte(i + k);
      if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return i;
    }
    i += length;
  }
  return std::string::npos;
}

// InvalidArgument "<source>:<line>:<column>: ..." when `text` is not UTF-8 (YAML text is
// Unicode, and proto string fields must hold UTF-8: protobuf refuses to serialize others).
absl::Status CheckUtf8(const std::string& text, const std::string& source) {
  const size_t bad = FirstInvalidUtf8(text);
  if (bad == std::string::npos) return absl::OkStatus();
  const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + bad, '\n'));
  const size_t column = bad - (line_start == std::string::npos || bad == 0 ? 0 : line_start + 1) + 1;
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", column, ": not UTF-8 text (byte 0x",
                                                 absl::Hex(static_cast<unsigned char>(text[bad]), absl::kZeroPad2), ")"));
}

}  // namespace

absl::Status ParseYamlToProto(const std::string& text, const std::string& source,
                              Message* message) {
  message->Clear();
  ROBOLOOP_RETURN_IF_ERROR(CheckUtf8(text, source));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  try {
    YamlProtoParser parser(source);
    ROBOLOOP_RETURN_IF_ERROR(parser.ParseMessage(root, message));
    return parser.Problems();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
}

absl::Status LoadYamlFile(const std::string& path, Message* message) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return ErrnoStatus(errno, path);
  // FIFOs and character devices stay readable: `<(...)` and /dev/stdin are configs too.
  if (S_ISDIR(info.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, expected a YAML file"));
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode) && !S_ISCHR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is not a regular file, expected a YAML file"));
  }
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseYamlToProto(buffer.str(), path, message);
}

}  // namespace roboloop
