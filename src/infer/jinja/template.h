// A Jinja template (parser.h has the syntax it reads) and its rendering with Hugging Face's chat
// template environment: the globals raise_exception, namespace, range, dict, strftime_now; the
// filters and tests of builtins.h; Python's string and dict methods that chat templates call;
// Python's semantics for values (Jinja's default Undefined). Rendering is bounded: an Error
// instead of output beyond kMaxOutputBytes, more than kMaxSteps steps, or macros nested deeper
// than kMaxCallDepth.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "infer/jinja/ast.h"

namespace gattn::jinja {

inline constexpr size_t kMaxOutputBytes = size_t(16) << 20;  // also the longest string or list
inline constexpr int64_t kMaxSteps = 2'000'000;
inline constexpr int kMaxCallDepth = 16;

using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  // An Error naming `origin` and the line where the source is not a template gattn can run.
  Template(std::string_view source, std::string origin);
  // The text, with the spans that came from the data in `variables`. An Error (raise_exception's
  // message, or what went wrong and where) when the template cannot render them.
  Text render(const Variables& variables) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::shared_ptr<const Program> program_;
};

}  // namespace gattn::jinja
