#include "daemon/core/spec/environment.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace servelab::core::spec {

bool LooksLikeSecret(absl::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(name);
  const std::vector<absl::string_view> words = absl::StrSplit(upper, '_');
  static const std::set<absl::string_view> kOneWord = {"TOKEN",  "SECRET",      "PASSWORD",
                                                       "PASSWD", "CREDENTIAL",  "CREDENTIALS",
                                                       "APIKEY", "ACCESSTOKEN", "AUTHTOKEN"};
  static const std::set<absl::string_view> kBeforeKey = {"API", "ACCESS", "PRIVATE"};
  for (size_t i = 0; i < words.size(); ++i) {
    if (kOneWord.count(words[i]) > 0) return true;
    if (i + 1 < words.size() && words[i + 1] == "KEY" && kBeforeKey.count(words[i]) > 0) {
      return true;
    }
  }
  return false;
}

bool IsVariableName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

std::vector<EnvProblem> EnvProblems(
    const std::string& holder, const google::protobuf::Map<std::string, std::string>& env,
    const google::protobuf::RepeatedPtrField<std::string>& pass_env) {
  std::vector<EnvProblem> problems;
  // Map order is unspecified; report in name order so the message is stable.
  const std::map<std::string, std::string> sorted(env.begin(), env.end());
  for (const auto& [name, value] : sorted) {
    const std::string path = absl::StrCat(holder, ".env.", name);
    if (!IsVariableName(name)) {
      problems.push_back({path, "not a variable name ([A-Za-z_][A-Za-z0-9_]*)"});
    } else if (LooksLikeSecret(name)) {
      problems.push_back(
          {path, absl::StrCat("looks like a secret, and env values are stored in the experiment "
                              "database and shown by status; list \"",
                              name, "\" in ", holder,
                              ".pass_env instead and start servelabd with it in its environment")});
    }
  }
  std::set<std::string> seen;
  for (int i = 0; i < pass_env.size(); ++i) {
    const std::string& name = pass_env.Get(i);
    const std::string path = absl::StrCat(holder, ".pass_env[", i, "]");
    if (!IsVariableName(name)) {
      problems.push_back(
          {path, absl::StrCat("\"", name, "\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)")});
    } else if (!seen.insert(name).second) {
      problems.push_back({path, absl::StrCat("\"", name, "\" is listed twice")});
    } else if (env.count(name) > 0) {
      problems.push_back({path, absl::StrCat("\"", name, "\" is also given a value in ", holder,
                                             ".env; name it in one of the two")});
    }
  }
  return problems;
}

}  // namespace servelab::core::spec
