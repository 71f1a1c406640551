#include "app/sweep/Expression.hpp"

#include "base/InputError.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

namespace memwall {

struct Expression::Node {
  enum class Kind { number, text, name, unary, binary, call } kind = Kind::number;
  double number                                                    = 0;
  std::string text; // text literal, name, operator or function
  std::vector<std::unique_ptr<Node>> args;
};

namespace {

using Node    = Expression::Node;
using NodePtr = std::unique_ptr<Node>;

// Parsing, evaluating and freeing a tree recurse once per level: 100,000 nested
// parentheses or unary minus signs overflowed the stack. Bounding the text bounds
// every left-deep chain (1+1+...), bounding nesting bounds the rest.
constexpr size_t longest_expression = 4096;
constexpr int deepest_nesting       = 100;

class Parser {
public:
  Parser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  NodePtr parse()
  {
    if (s_.size() > longest_expression)
      throw InputError(where_ + ": expression of " + std::to_string(s_.size()) + " characters; the limit is " +
                       std::to_string(longest_expression));
    NodePtr n = parse_or();
    skip();
    if (pos_ < s_.size())
      fail("unexpected '" + s_.substr(pos_, 1) + "'");
    return n;
  }

private:
  // Counts one level of nesting for as long as it lives.
  struct Level {
    Parser& p;
    explicit Level(Parser& parser) : p(parser)
    {
      if (++p.depth_ > deepest_nesting)
        p.fail("nested deeper than " + std::to_string(deepest_nesting) + " levels");
    }
    ~Level() { --p.depth_; }
  };

  [[noreturn]] void fail(const std::string& what) const
  {
    throw InputError(where_ + ": " + what + " at column " + std::to_string(pos_ + 1) + " of \"" + s_ + "\"");
  }
  void skip()
  {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool word(const char* w)
  {
    skip();
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(pos_, n, w) != 0)
      return false;
    if (std::isalnum(static_cast<unsigned char>(w[0])) && pos_ + n < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[pos_ + n])) || s_[pos_ + n] == '_'))
      return false; // "order" is not "or"
    pos_ += n;
    return true;
  }
  static NodePtr make(Node::Kind k, std::string op, NodePtr a, NodePtr b = nullptr)
  {
    auto n  = std::make_unique<Node>();
    n->kind = k;
    n->text = std::move(op);
    n->args.push_back(std::move(a));
    if (b)
      n->args.push_back(std::move(b));
    return n;
  }

  NodePtr parse_or()
  {
    Level level(*this);
    NodePtr n = parse_and();
    while (word("or") || word("||"))
      n = make(Node::Kind::binary, "or", std::move(n), parse_and());
    return n;
  }
  NodePtr parse_and()
  {
    NodePtr n = parse_not();
    while (word("and") || word("&&"))
      n = make(Node::Kind::binary, "and", std::move(n), parse_not());
    return n;
  }
  NodePtr parse_not()
  {
    if (word("not") || (peek('!') && !peek_at(1, '=') && word("!"))) {
      Level level(*this);
      return make(Node::Kind::unary, "not", parse_not());
    }
    return parse_compare();
  }
  bool peek(char c)
  {
    skip();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool peek_at(size_t k, char c) const { return pos_ + k < s_.size() && s_[pos_ + k] == c; }
  NodePtr parse_compare()
  {
    NodePtr n = parse_sum();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (word(op))
        return make(Node::Kind::binary, op, std::move(n), parse_sum());
    return n;
  }
  NodePtr parse_sum()
  {
    NodePtr n = parse_product();
    for (;;) {
      if (word("+"))
        n = make(Node::Kind::binary, "+", std::move(n), parse_product());
      else if (word("-"))
        n = make(Node::Kind::binary, "-", std::move(n), parse_product());
      else
        return n;
    }
  }
  NodePtr parse_product()
  {
    NodePtr n = parse_unary();
    for (;;) {
      if (word("*"))
        n = make(Node::Kind::binary, "*", std::move(n), parse_unary());
      else if (word("/"))
        n = make(Node::Kind::binary, "/", std::move(n), parse_unary());
      else if (word("%"))
        n = make(Node::Kind::binary, "%", std::move(n), parse_unary());
      else
        return n;
    }
  }
  NodePtr parse_unary()
  {
    if (word("-")) {
      Level level(*this);
      return make(Node::Kind::unary, "-", parse_unary());
    }
    return parse_power();
  }
  NodePtr parse_power() // binds tighter than unary minus on its left: -2**2 = -4
  {
    NodePtr n = parse_atom();
    skip();
    if (s_.compare(pos_, 2, "**") == 0) {
      pos_ += 2;
      Level level(*this);
      return make(Node::Kind::binary, "**", std::move(n), parse_unary());
    }
    return n;
  }
  NodePtr parse_atom()
  {
    skip();
    if (pos_ >= s_.size())
      fail("expression ends too early");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      NodePtr n = parse_or();
      if (!word(")"))
        fail("expected ')'");
      return n;
    }
    auto n = std::make_unique<Node>();
    if (c == '\'' || c == '"') {
      size_t end = s_.find(c, pos_ + 1);
      if (end == std::string::npos)
        fail("unterminated string");
      n->kind = Node::Kind::text;
      n->text = s_.substr(pos_ + 1, end - pos_ - 1);
      pos_    = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* begin = s_.c_str() + pos_;
      char* end         = nullptr;
      n->number         = std::strtod(begin, &end);
      if (end == begin)
        fail("bad number");
      pos_ += static_cast<size_t>(end - begin);
      return n;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_')
      fail("unexpected '" + std::string(1, c) + "'");
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    std::string name = s_.substr(start, pos_ - start);
    if (name == "true" || name == "false") {
      n->number = name == "true" ? 1 : 0;
      return n;
    }
    if (peek('(')) {
      if (name != "min" && name != "max")
        fail("unknown function '" + name + "' (functions: min, max)");
      ++pos_;
      n->kind = Node::Kind::call;
      n->text = name;
      n->args.push_back(parse_or());
      while (word(","))
        n->args.push_back(parse_or());
      if (!word(")"))
        fail("expected ')'");
      return n;
    }
    n->kind = Node::Kind::name;
    n->text = name;
    return n;
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
  int depth_  = 0;
};

using Lookup = std::function<std::optional<ExprValue>(const std::string&)>;

double as_number(const ExprValue& v, const std::string& where, const std::string& op)
{
  if (const double* d = std::get_if<double>(&v))
    return *d;
  throw InputError(where + ": '" + op + "' needs numbers, got the text '" + std::get<std::string>(v) + "'");
}

ExprValue eval(const Node& n, const Lookup& lookup, const std::string& where)
{
  switch (n.kind) {
    case Node::Kind::number: return n.number;
    case Node::Kind::text: return n.text;
    case Node::Kind::name: {
      std::optional<ExprValue> v = lookup(n.text);
      if (!v)
        throw InputError(where + ": unknown name '" + n.text + "'");
      return *v;
    }
    case Node::Kind::unary: {
      ExprValue a = eval(*n.args[0], lookup, where);
      return n.text == "-" ? -as_number(a, where, "-") : (as_number(a, where, "not") == 0 ? 1.0 : 0.0);
    }
    case Node::Kind::call: {
      double best = as_number(eval(*n.args[0], lookup, where), where, n.text);
      for (size_t i = 1; i < n.args.size(); ++i) {
        double x = as_number(eval(*n.args[i], lookup, where), where, n.text);
        best     = n.text == "min" ? std::min(best, x) : std::max(best, x);
      }
      return best;
    }
    case Node::Kind::binary: break;
  }
  const std::string& op = n.text;
  if (op == "and" || op == "or") {
    bool a = as_number(eval(*n.args[0], lookup, where), where, op) != 0;
    if (op == "and" ? !a : a)
      return a ? 1.0 : 0.0; // short circuit
    return as_number(eval(*n.args[1], lookup, where), where, op) != 0 ? 1.0 : 0.0;
  }
  ExprValue a = eval(*n.args[0], lookup, where), b = eval(*n.args[1], lookup, where);
  if (op == "==" || op == "!=") {
    bool eq = a.index() == b.index() && a == b;
    return (op == "==") == eq ? 1.0 : 0.0;
  }
  if (a.index() == 1 && b.index() == 1 && (op == "<" || op == "<=" || op == ">" || op == ">=")) {
    const auto &x = std::get<std::string>(a), &y = std::get<std::string>(b);
    bool r = op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y;
    return r ? 1.0 : 0.0;
  }
  double x = as_number(a, where, op), y = as_number(b, where, op);
  if (op == "+")
    return x + y;
  if (op == "-")
    return x - y;
  if (op == "*")
    return x * y;
  if (op == "/")
    return x / y;
  if (op == "%")
    return std::fmod(x, y);
  if (op == "**")
    return std::pow(x, y);
  if (op == "<")
    return x < y ? 1.0 : 0.0;
  if (op == "<=")
    return x <= y ? 1.0 : 0.0;
  if (op == ">")
    return x > y ? 1.0 : 0.0;
  return x >= y ? 1.0 : 0.0;
}

} // namespace

Expression::Expression(const std::string& text, const std::string& where)
    : text_(text), where_(where), root_(Parser(text_, where_).parse())
{}
Expression::~Expression()                                = default;
Expression::Expression(Expression&&) noexcept            = default;
Expression& Expression::operator=(Expression&&) noexcept = default;

ExprValue Expression::evaluate(const Lookup& lookup) const { return eval(*root_, lookup, where_); }

static void collect_names(const Node& n, std::vector<std::string>& out)
{
  if (n.kind == Node::Kind::name && std::find(out.begin(), out.end(), n.text) == out.end())
    out.push_back(n.text);
  for (const auto& a : n.args)
    collect_names(*a, out);
}

std::vector<std::string> Expression::names() const
{
  std::vector<std::string> out;
  collect_names(*root_, out);
  return out;
}

bool Expression::test(const Lookup& lookup) const { return as_number(evaluate(lookup), where_, "filter") != 0; }

} // namespace memwall
