#include "daemon/engines/flag_table.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines {
namespace {

// Oldest first within a tool; FindFlagTable's "newest" is the last one.
const std::vector<const FlagTable*>& AllTables() {
  static const auto* const tables = new std::vector<const FlagTable*>{
      &flag_tables::VllmServe0111(),         &flag_tables::VllmAscendServe0110rc0(),
      &flag_tables::VllmToyProxy0111(),      &flag_tables::VllmAscendLbProxy0110rc0(),
      &flag_tables::SglangLaunchServer055(), &flag_tables::SglangRouter021(),
  };
  return *tables;
}

// Debian's abseil has its own string_view type, so std::string_view values
// go through std::string before they meet StrCat.
std::string Str(std::string_view s) { return std::string(s); }

std::string Join(const std::vector<std::string_view>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string_view Strip(std::string_view s) {
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::string Context(const FlagTable& table) {
  return absl::StrCat(Str(table.tool), " ", Str(table.version));
}

// argparse's _negative_number_matcher: '^-\d+$|^-\d*\.\d+$'. Such an argument
// is a value, not an option, because none of our tables has an option that
// looks like a negative number.
bool IsNegativeNumber(std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  std::string_view rest = arg.substr(1);
  size_t dot = rest.find('.');
  auto digits = [](std::string_view s) {
    for (char c : s) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (dot == std::string_view::npos) return digits(rest);
  return digits(rest.substr(0, dot)) && rest.size() > dot + 1 && digits(rest.substr(dot + 1));
}

bool LooksLikeOption(std::string_view arg) {
  return arg.size() > 1 && arg[0] == '-' && !IsNegativeNumber(arg);
}

// Python int(): optional sign, decimal digits, surrounding whitespace.
bool IsPythonInt(std::string_view text) {
  std::string_view s = Strip(text);
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// vllm/engine/arg_utils.py human_readable_int: "25.6k" (decimal multipliers
// k/m/g take decimals), "1K" (binary K/M/G take integers only), or int().
bool IsHumanReadableInt(std::string_view text) {
  std::string_view s = Strip(text);
  if (IsPythonInt(s)) return true;
  if (s.size() < 2) return false;
  char suffix = s.back();
  std::string_view number = s.substr(0, s.size() - 1);
  bool decimal = suffix == 'k' || suffix == 'm' || suffix == 'g';
  bool binary = suffix == 'K' || suffix == 'M' || suffix == 'G';
  if (!decimal && !binary) return false;
  size_t dot = number.find('.');
  if (dot != std::string_view::npos && binary) return false;
  auto digits = [](std::string_view d) {
    if (d.empty()) return false;
    for (char c : d) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (dot == std::string_view::npos) return digits(number);
  return digits(number.substr(0, dot)) && digits(number.substr(dot + 1));
}

// Python float(): strtod covers decimals, exponents, inf and nan.
bool IsPythonFloat(std::string_view text) {
  std::string s(Strip(text));
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// A small recursive-descent JSON validator; depth-limited so hostile input
// cannot exhaust the stack.
class JsonValidator {
 public:
  explicit JsonValidator(std::string_view text) : text_(text) {}

  bool Valid() {
    SkipSpace();
    if (!Value(0)) return false;
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  static constexpr int kMaxDepth = 256;

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool Value(int depth) {
    if (depth > kMaxDepth) return false;
    switch (Peek()) {
      case '{':
        return Object(depth);
      case '[':
        return Array(depth);
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      case 'N':
        return Literal("NaN");  // Python's json.loads accepts NaN / Infinity.
      case 'I':
        return Literal("Infinity");
      default:
        return Number();
    }
  }

  bool Object(int depth) {
    ++pos_;  // '{'
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (!String()) return false;
      SkipSpace();
      if (Peek() != ':') return false;
      ++pos_;
      SkipSpace();
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  bool Array(int depth) {
    ++pos_;  // '['
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  bool String() {
    if (Peek() != '"') return false;
    ++pos_;
    while (!AtEnd()) {
      unsigned char c = static_cast<unsigned char>(text_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (AtEnd()) return false;
      char escaped = text_[pos_++];
      if (escaped == 'u') {
        for (int i = 0; i < 4; ++i) {
          if (AtEnd() || !absl::ascii_isxdigit(static_cast<unsigned char>(text_[pos_++]))) {
            return false;
          }
        }
      } else if (std::string_view("\"\\/bfnrt").find(escaped) == std::string_view::npos) {
        return false;
      }
    }
    return false;
  }

  bool Number() {
    size_t start = pos_;
    if (Peek() == '-') {
      ++pos_;
      if (Literal("Infinity")) return true;
    }
    if (Peek() == '0') {
      ++pos_;
    } else if (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    } else {
      return false;
    }
    if (Peek() == '.') {
      ++pos_;
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) return false;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) return false;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    return pos_ > start;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// One option string of the table resolved to its action.
struct Resolved {
  const FlagSpec* spec = nullptr;
  bool negated = false;  // The `--no-x` form of a kBoolOptional flag.
  std::string key;       // The ParsedArgs key: canonical name, or "--no-" + it.
};

// Every option string of `table` ("--x", aliases, "--no-x") and what it means.
std::vector<std::pair<std::string, Resolved>> OptionStrings(const FlagTable& table) {
  std::vector<std::pair<std::string, Resolved>> out;
  for (const FlagSpec& spec : table.flags) {
    std::string canonical(spec.name);
    out.push_back({canonical, {&spec, false, canonical}});
    for (std::string_view alias : spec.aliases) {
      out.push_back({std::string(alias), {&spec, false, canonical}});
    }
    if (spec.value == FlagValue::kBoolOptional && canonical.rfind("--", 0) == 0) {
      std::string negated = absl::StrCat("--no-", Str(spec.name.substr(2)));
      out.push_back({negated, {&spec, true, negated}});
    }
  }
  return out;
}

// argparse's lookup: an exact option string, else a unique prefix of a long
// one (allow_abbrev), else "-Xvalue" for a one-letter short option.
absl::StatusOr<std::optional<Resolved>> Resolve(
    const FlagTable& table, const std::vector<std::pair<std::string, Resolved>>& options,
    const std::string& key, std::optional<std::string>& explicit_value) {
  for (const auto& [name, resolved] : options) {
    if (name == key) return std::optional<Resolved>(resolved);
  }
  if (absl::StartsWith(key, "--")) {
    std::vector<const std::pair<std::string, Resolved>*> matches;
    for (const auto& option : options) {
      if (absl::StartsWith(option.first, key)) matches.push_back(&option);
    }
    // Several option strings of one action (a flag and its alias) are one
    // match, as in argparse since Python 3.12.
    bool one_action = !matches.empty();
    for (const auto* m : matches) {
      one_action &= m->second.spec == matches[0]->second.spec &&
                    m->second.negated == matches[0]->second.negated;
    }
    if (one_action) return std::optional<Resolved>(matches[0]->second);
    if (matches.size() > 1) {
      std::vector<std::string> names;
      for (const auto* m : matches) names.push_back(m->first);
      return absl::InvalidArgumentError(absl::StrCat(key, " is ambiguous in ", Context(table),
                                                     " (could match ", absl::StrJoin(names, ", "),
                                                     ")"));
    }
    return std::optional<Resolved>();
  }
  if (key.size() > 2 && !explicit_value.has_value()) {
    std::string short_option = key.substr(0, 2);
    for (const auto& [name, resolved] : options) {
      if (name == short_option && resolved.spec->value != FlagValue::kNone &&
          resolved.spec->value != FlagValue::kBoolOptional) {
        explicit_value = key.substr(2);
        return std::optional<Resolved>(resolved);
      }
    }
  }
  return std::optional<Resolved>();
}

absl::Status CheckValue(const FlagTable& table, const FlagSpec& spec, const std::string& value) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat(Str(spec.name), ": \"", value, "\" ", what, " (", Context(table), ")"));
  };
  switch (spec.value) {
    case FlagValue::kInt:
      if (spec.human_readable_int ? !IsHumanReadableInt(value) : !IsPythonInt(value)) {
        return bad("is not an integer");
      }
      break;
    case FlagValue::kFloat:
      if (!IsPythonFloat(value)) return bad("is not a number");
      break;
    case FlagValue::kJson:
      if (!IsValidJson(value)) return bad("is not valid JSON");
      break;
    case FlagValue::kChoice:
    case FlagValue::kList:
      if (!spec.choices.empty()) {
        bool found = false;
        for (std::string_view choice : spec.choices) found |= choice == value;
        if (!found) return bad(absl::StrCat("is not one of ", Join(spec.choices, ", ")));
      }
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

// FlexibleArgumentParser: underscores become dashes in the name part of a
// long option (up to the first '.'; `--json-arg.key_name` keeps the key).
std::string NormalizeUnderscores(const std::string& key) {
  std::string out = key;
  size_t end = out.find('.');
  if (end == std::string::npos) end = out.size();
  for (size_t i = 2; i < end; ++i) {
    if (out[i] == '_') out[i] = '-';
  }
  return out;
}

using OptionTable = std::vector<std::pair<std::string, Resolved>>;

// The value of a one-value option: `--x=v`, else the next argument (which
// `i` then moves past). `name` is the option as the error should say it.
absl::StatusOr<std::string> TakeOneValue(const FlagTable& table, const std::string& name,
                                         const std::optional<std::string>& explicit_value,
                                         const std::vector<std::string>& args, size_t& i) {
  if (explicit_value.has_value()) return *explicit_value;
  if (i + 1 < args.size() && !LooksLikeOption(args[i + 1])) return args[++i];
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": expected one argument (", Context(table), ")"));
}

// FlexibleArgumentParser's dotted form, `--kv-transfer-config.kv_role X`, is
// one key of a JSON flag: the canonical name of that JSON flag when `key` is
// such a form, else nothing.
std::optional<std::string> DottedJsonParent(const FlagTable& table, const OptionTable& options,
                                            const std::string& key) {
  if (!table.underscores_as_dashes || key.find('.') == std::string::npos) return std::nullopt;
  std::string base = key.substr(0, key.find('.'));
  std::optional<std::string> no_value;
  absl::StatusOr<std::optional<Resolved>> parent = Resolve(table, options, base, no_value);
  if (parent.ok() && parent->has_value() && (*parent)->spec->value == FlagValue::kJson) {
    return Str((*parent)->spec->name);
  }
  return std::nullopt;
}

// The values of the resolved option args[i] (`i` moves past those taken
// from the following arguments), checked and appended to `values`.
absl::Status TakeValues(const FlagTable& table, const Resolved& resolved,
                        const std::optional<std::string>& explicit_value,
                        const std::vector<std::string>& args, size_t& i,
                        std::vector<std::string>& values) {
  const FlagSpec& spec = *resolved.spec;
  if (spec.value == FlagValue::kNone || spec.value == FlagValue::kBoolOptional) {
    if (explicit_value.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(resolved.key, " takes no value, got \"",
                                                     *explicit_value, "\" (", Context(table), ")"));
    }
    return absl::OkStatus();
  }
  if (spec.value == FlagValue::kList) {
    size_t taken = 0;
    if (explicit_value.has_value()) {
      if (absl::Status s = CheckValue(table, spec, *explicit_value); !s.ok()) return s;
      values.push_back(*explicit_value);
      taken = 1;
    } else {
      while (i + 1 < args.size() && !LooksLikeOption(args[i + 1])) {
        if (absl::Status s = CheckValue(table, spec, args[i + 1]); !s.ok()) return s;
        values.push_back(args[++i]);
        ++taken;
      }
    }
    if (taken == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Str(spec.name), ": expected at least one argument (", Context(table), ")"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> value = TakeOneValue(table, Str(spec.name), explicit_value, args, i);
  if (!value.ok()) return value.status();
  if (absl::Status s = CheckValue(table, spec, *value); !s.ok()) return s;
  values.push_back(*std::move(value));
  return absl::OkStatus();
}

absl::Status CheckPositionalCount(const FlagTable& table, const ParsedArgs& parsed) {
  if (static_cast<int>(parsed.positionals.size()) == table.positionals) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      Context(table), " takes ", table.positionals, " positional argument(s), got ",
      parsed.positionals.size(),
      parsed.positionals.empty() ? ""
                                 : absl::StrCat(": ", absl::StrJoin(parsed.positionals, " "))));
}

}  // namespace

std::string ParsedArgs::Last(const std::string& flag) const {
  auto it = flags.find(flag);
  if (it == flags.end() || it->second.empty()) return "";
  return it->second.back();
}

absl::StatusOr<const FlagTable*> FindFlagTable(std::string_view tool, std::string_view version) {
  const FlagTable* newest = nullptr;
  for (const FlagTable* table : AllTables()) {
    if (table->tool != tool) continue;
    if (!version.empty() && table->version == version) return table;
    newest = table;
  }
  if (newest == nullptr) {
    return absl::NotFoundError(absl::StrCat("no flag table for tool \"", Str(tool),
                                            "\"; known tools: ", Join(KnownTools(), ", ")));
  }
  if (version.empty()) return newest;
  return absl::NotFoundError(absl::StrCat("no flag table for ", Str(tool), " version ",
                                          Str(version),
                                          "; known versions: ", Join(KnownVersions(tool), ", ")));
}

std::vector<std::string_view> KnownVersions(std::string_view tool) {
  std::vector<std::string_view> versions;
  for (const FlagTable* table : AllTables()) {
    if (table->tool == tool) versions.push_back(table->version);
  }
  return versions;
}

std::vector<std::string_view> KnownTools() {
  std::vector<std::string_view> tools;
  for (const FlagTable* table : AllTables()) {
    bool seen = false;
    for (std::string_view t : tools) seen |= t == table->tool;
    if (!seen) tools.push_back(table->tool);
  }
  return tools;
}

bool IsValidJson(std::string_view text) { return JsonValidator(text).Valid(); }

absl::StatusOr<ParsedArgs> ParseFlags(const FlagTable& table,
                                      const std::vector<std::string>& args) {
  const OptionTable options = OptionStrings(table);
  ParsedArgs parsed;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || !LooksLikeOption(arg)) {
      parsed.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    std::string key = arg;
    std::optional<std::string> explicit_value;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      key = arg.substr(0, eq);
      explicit_value = arg.substr(eq + 1);
    }
    if (table.underscores_as_dashes && absl::StartsWith(key, "--")) key = NormalizeUnderscores(key);

    absl::StatusOr<std::optional<Resolved>> found = Resolve(table, options, key, explicit_value);
    if (!found.ok()) return found.status();
    if (!found->has_value()) {
      if (std::optional<std::string> parent = DottedJsonParent(table, options, key)) {
        // Kept under the dotted key as given, after the canonical parent name.
        absl::StatusOr<std::string> value = TakeOneValue(table, key, explicit_value, args, i);
        if (!value.ok()) return value.status();
        parsed.flags[absl::StrCat(*parent, key.substr(key.find('.')))].push_back(*value);
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(Context(table), " has no flag ", key.empty() ? arg : key));
    }
    const Resolved& resolved = **found;
    std::vector<std::string>& values = parsed.flags[resolved.key];
    if (absl::Status s = TakeValues(table, resolved, explicit_value, args, i, values); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = CheckPositionalCount(table, parsed); !s.ok()) return s;
  return parsed;
}

}  // namespace servelab::engines
