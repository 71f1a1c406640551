#pragma once
// The small expression language of sweep specs: `filter` drops combinations of axis
// values, `metrics` derive columns from a point's axes and results.
//
//   numbers 4, 1.5e9; strings 'dgx-a100' or "dgx-a100"; true, false
//   names   dotted keys: training.micro_batch, tokens_per_s, ttft_s.p50
//   + - * / % **, unary -, == != < <= > >=, and or not, ( ), min(a, b), max(a, b)
//
// Parsed once (errors name the expression and the position), evaluated per point.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace memwall {

using ExprValue = std::variant<double, std::string>;

class Expression {
public:
  // `where` prefixes every error ("sweep.yaml: filter").
  Expression(const std::string& text, const std::string& where);
  ~Expression();
  Expression(Expression&&) noexcept;
  Expression& operator=(Expression&&) noexcept;

  // `lookup` gives a name's value, or nullopt for an unknown name (an InputError).
  ExprValue evaluate(const std::function<std::optional<ExprValue>(const std::string&)>& lookup) const;
  bool test(const std::function<std::optional<ExprValue>(const std::string&)>& lookup) const;
  const std::string& text() const { return text_; }
  const std::string& where() const { return where_; }
  // The names the expression reads, each once, in order of appearance.
  std::vector<std::string> names() const;

  struct Node;

private:
  std::string text_, where_;
  std::unique_ptr<Node> root_;
};

} // namespace memwall
