#include "infer/jinja/parser.h"

#include <algorithm>

#include "infer/jinja/lexer.h"
#include "util/error.h"

namespace gattn::jinja {

namespace {
constexpr int kMaxDepth = 64;  // nesting of expressions and blocks

ExprPtr make(Expr::Op op, int line, std::vector<ExprPtr> args = {}, std::string name = {}) {
  auto e = std::make_unique<Expr>();
  e->op = op;
  e->line = line;
  e->args = std::move(args);
  e->name = std::move(name);
  return e;
}

template <typename... E>
std::vector<ExprPtr> exprs(E&&... e) {
  std::vector<ExprPtr> v;
  (v.push_back(std::forward<E>(e)), ...);
  return v;
}

// One tag's tokens, read by recursive descent in Jinja's precedence order.
class ExprParser {
 public:
  ExprParser(std::string_view code, std::string where, int line)
      : where_(std::move(where)), line_(line), tokens_(tokenize(code, where_)) {}

  const std::string& where() const { return where_; }
  bool at_end() const { return peek().kind == Token::Kind::end; }
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  bool at_name(std::string_view n, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::name && peek(ahead).text == n;
  }
  bool at_op(std::string_view o) const {
    return peek().kind == Token::Kind::op && peek().text == o;
  }
  bool skip_name(std::string_view n) { return at_name(n) ? (++pos_, true) : false; }
  bool skip_op(std::string_view o) { return at_op(o) ? (++pos_, true) : false; }
  void expect_op(std::string_view o) {
    if (!skip_op(o)) fail(where_, ": expected '", o, "', got ", describe(peek()));
  }
  std::string name() {
    if (peek().kind != Token::Kind::name) fail(where_, ": expected a name, got ", describe(peek()));
    return tokens_[pos_++].text;
  }
  void expect_end() {
    if (!at_end()) fail(where_, ": unexpected ", describe(peek()));
  }

  ExprPtr expression() {
    Deeper d(*this);
    ExprPtr e = or_expr();
    while (skip_name("if")) {
      ExprPtr condition = or_expr();
      ExprPtr otherwise = skip_name("else") ? expression() : nullptr;
      e = make(Expr::Op::conditional, line_,
               exprs(std::move(condition), std::move(e), std::move(otherwise)));
    }
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (skip_name("or")) e = make(Expr::Op::either, line_, exprs(std::move(e), and_expr()));
    return e;
  }

 private:
  struct Deeper {
    ExprParser& p;
    explicit Deeper(ExprParser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) fail(p.where_, ": expressions nested deeper than ", kMaxDepth);
    }
    ~Deeper() { --p.depth_; }
  };

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::end:
        return "the end of the tag";
      case Token::Kind::string:
        return "a string";
      case Token::Kind::integer:
      case Token::Kind::number:
        return "a number";
      default:
        return "'" + t.text + "'";
    }
  }

  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (skip_name("and")) e = make(Expr::Op::both, line_, exprs(std::move(e), not_expr()));
    return e;
  }
  ExprPtr not_expr() {
    Deeper d(*this);
    if (skip_name("not")) return make(Expr::Op::negate, line_, exprs(not_expr()));
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = sum();
    for (;;) {
      std::string op;
      if (peek().kind == Token::Kind::op &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
        op = tokens_[pos_++].text;
      } else if (skip_name("in")) {
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        pos_ += 2;
        op = "not in";
      } else {
        return e;
      }
      e = make(Expr::Op::binary, line_, exprs(std::move(e), sum()), op);
    }
  }
  ExprPtr binary_chain(ExprPtr (ExprParser::*next)(), std::initializer_list<std::string_view> ops) {
    ExprPtr e = (this->*next)();
    for (;;) {
      const auto it =
          std::find_if(ops.begin(), ops.end(), [&](std::string_view o) { return at_op(o); });
      if (it == ops.end()) return e;
      ++pos_;
      e = make(Expr::Op::binary, line_, exprs(std::move(e), (this->*next)()), std::string(*it));
    }
  }
  ExprPtr sum() { return binary_chain(&ExprParser::concat, {"+", "-"}); }
  ExprPtr concat() { return binary_chain(&ExprParser::product, {"~"}); }
  ExprPtr product() { return binary_chain(&ExprParser::power, {"*", "/", "//", "%"}); }
  ExprPtr power() { return binary_chain(&ExprParser::unary_with_filters, {"**"}); }
  ExprPtr unary_with_filters() { return unary(true); }

  ExprPtr unary(bool filters) {
    Deeper d(*this);
    ExprPtr e;
    if (skip_op("-")) {
      e = make(Expr::Op::minus, line_, exprs(unary(false)));
    } else if (skip_op("+")) {
      e = unary(false);
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    while (filters) {
      if (skip_op("|")) {
        e = filter(std::move(e));
      } else if (skip_name("is")) {
        e = test(std::move(e));
      } else if (at_op("(")) {
        e = postfix(std::move(e));
      } else {
        break;
      }
    }
    return e;
  }

  ExprPtr literal(Value v) {
    ExprPtr e = make(Expr::Op::literal, line_);
    e->value = std::move(v);
    return e;
  }

  ExprPtr primary() {
    const Token t = peek();
    ++pos_;
    switch (t.kind) {
      case Token::Kind::integer:
        return literal(Value::integer(t.integer));
      case Token::Kind::number:
        return literal(Value::number(t.number));
      case Token::Kind::string: {
        std::string s = t.text;
        while (peek().kind == Token::Kind::string) s += tokens_[pos_++].text;
        return literal(Value::literal(std::move(s)));
      }
      case Token::Kind::name:
        if (t.text == "true" || t.text == "True") return literal(Value::boolean(true));
        if (t.text == "false" || t.text == "False") return literal(Value::boolean(false));
        if (t.text == "none" || t.text == "None") return literal(Value::none());
        return make(Expr::Op::name, line_, {}, t.text);
      case Token::Kind::op:
        if (t.text == "(") return parenthesised();
        if (t.text == "[") return list_literal();
        if (t.text == "{") return dict_literal();
        [[fallthrough]];
      default:
        fail(where_, ": unexpected ", describe(t));
    }
  }

  ExprPtr parenthesised() {
    if (skip_op(")")) return make(Expr::Op::list, line_);  // ()
    ExprPtr first = expression();
    if (skip_op(")")) return first;
    std::vector<ExprPtr> items = exprs(std::move(first));
    while (skip_op(",") && !at_op(")")) items.push_back(expression());
    expect_op(")");
    return make(Expr::Op::list, line_, std::move(items));
  }
  ExprPtr list_literal() {
    std::vector<ExprPtr> items;
    while (!skip_op("]")) {
      if (!items.empty()) expect_op(",");
      if (skip_op("]")) break;
      items.push_back(expression());
    }
    return make(Expr::Op::list, line_, std::move(items));
  }
  ExprPtr dict_literal() {
    std::vector<ExprPtr> items;
    while (!skip_op("}")) {
      if (!items.empty()) expect_op(",");
      if (skip_op("}")) break;
      items.push_back(expression());
      expect_op(":");
      items.push_back(expression());
    }
    return make(Expr::Op::dict, line_, std::move(items));
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (skip_op(".")) {
        if (peek().kind == Token::Kind::integer) {
          e = make(Expr::Op::index, line_,
                   exprs(std::move(e), literal(Value::integer(peek().integer))));
          ++pos_;
        } else {
          e = make(Expr::Op::attribute, line_, exprs(std::move(e)), name());
        }
      } else if (skip_op("[")) {
        e = subscript(std::move(e));
      } else if (skip_op("(")) {
        ExprPtr call = make(Expr::Op::call, line_, exprs(std::move(e)));
        arguments(*call);
        e = std::move(call);
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr e) {
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    while (!skip_op("]")) {
      if (skip_op(":")) {
        if (++part > 2) fail(where_, ": a slice has at most three parts");
        slice = true;
        continue;
      }
      if (parts[part]) fail(where_, ": expected ':' or ']' in a subscript");
      parts[part] = expression();
    }
    if (!slice) {
      if (!parts[0]) fail(where_, ": an empty subscript");
      return make(Expr::Op::index, line_, exprs(std::move(e), std::move(parts[0])));
    }
    return make(Expr::Op::slice, line_,
                exprs(std::move(e), std::move(parts[0]), std::move(parts[1]), std::move(parts[2])));
  }

  // ( positional..., name=value... ), the "(" already read.
  void arguments(Expr& call) {
    while (!skip_op(")")) {
      if (call.args.size() > 1 || !call.named.empty()) expect_op(",");
      if (skip_op(")")) break;
      if (peek().kind == Token::Kind::name && peek(1).kind == Token::Kind::op &&
          peek(1).text == "=") {
        std::string key = name();
        ++pos_;
        call.named.emplace_back(std::move(key), expression());
      } else {
        if (!call.named.empty()) fail(where_, ": a positional argument after a named one");
        call.args.push_back(expression());
      }
    }
  }

  ExprPtr filter(ExprPtr input) {
    ExprPtr f = make(Expr::Op::filter, line_, exprs(std::move(input)), name());
    if (skip_op("(")) arguments(*f);
    return f;
  }

  ExprPtr test(ExprPtr input) {
    const bool negated = skip_name("not");
    ExprPtr t = make(Expr::Op::test, line_, exprs(std::move(input)), name());
    t->negated = negated;
    if (skip_op("(")) {
      arguments(*t);
    } else if (starts_test_argument()) {
      t->args.push_back(unary(false));
    }
    return t;
  }
  // `x is divisibleby 3`, `x is sameas none`: an argument without parentheses.
  bool starts_test_argument() const {
    const Token& t = peek();
    if (t.kind == Token::Kind::integer || t.kind == Token::Kind::number ||
        t.kind == Token::Kind::string)
      return true;
    if (t.kind != Token::Kind::name) return false;
    for (const char* stop : {"else", "or", "and", "if", "is", "in", "not"})
      if (t.text == stop) return false;
    return true;
  }

  std::string where_;
  int line_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// The pieces into a tree of statements.
class BlockParser {
 public:
  BlockParser(std::vector<Piece> pieces, const std::string& origin)
      : pieces_(std::move(pieces)), origin_(origin) {}

  Program run() {
    Program p;
    std::string ended;
    p.body = body({}, ended);
    return p;
  }

 private:
  std::string where(int line) const { return cat(origin_, ":", line); }

  // Statements up to one of `stops` (its keyword in `ended`; its tag's parser in `stop_`), or to
  // the end of the template when `stops` is empty.
  Body body(std::initializer_list<std::string_view> stops, std::string& ended) {
    if (++depth_ > kMaxDepth) fail(origin_, ": blocks nested deeper than ", kMaxDepth);
    Body nodes;
    while (next_ < pieces_.size()) {
      const Piece& piece = pieces_[next_++];
      if (piece.kind == Piece::Kind::text) {
        nodes.push_back(text_node(piece));
      } else if (piece.kind == Piece::Kind::output) {
        ExprParser p(piece.text, where(piece.line), piece.line);
        auto n = node(Node::Kind::output, piece.line);
        n->expr = p.expression();
        p.expect_end();
        nodes.push_back(std::move(n));
      } else {
        auto p = std::make_unique<ExprParser>(piece.text, where(piece.line), piece.line);
        const std::string keyword = p->name();
        if (std::find(stops.begin(), stops.end(), keyword) != stops.end()) {
          ended = keyword;
          stop_ = std::move(p);
          --depth_;
          return nodes;
        }
        if (keyword == "generation") {  // Hugging Face's marker of the assistant's tokens
          p->expect_end();
          std::string end;
          for (NodePtr& n : body({"endgeneration"}, end)) nodes.push_back(std::move(n));
          stop_->expect_end();
          continue;
        }
        nodes.push_back(statement(keyword, *p, piece.line));
      }
    }
    if (stops.size())
      fail(origin_, ": the template ends inside a block (expected {% ", *stops.begin(), " %})");
    --depth_;
    return nodes;
  }

  static NodePtr node(Node::Kind kind, int line) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = line;
    return n;
  }
  static NodePtr text_node(const Piece& piece) {
    auto n = node(Node::Kind::text, piece.line);
    n->text = piece.text;
    return n;
  }

  NodePtr statement(const std::string& keyword, ExprParser& p, int line) {
    if (keyword == "if") return if_statement(p, line);
    if (keyword == "for") return for_statement(p, line);
    if (keyword == "set") return set_statement(p, line);
    if (keyword == "macro") return macro_statement(p, line);
    if (keyword == "break" || keyword == "continue") {
      p.expect_end();
      if (loops_ == 0) fail(p.where(), ": {% ", keyword, " %} outside a loop");
      return node(keyword == "break" ? Node::Kind::loop_break : Node::Kind::loop_continue, line);
    }
    fail(p.where(), ": gattn's template engine does not run {% ", keyword, " %}");
  }

  NodePtr if_statement(ExprParser& p, int line) {
    auto n = node(Node::Kind::branches, line);
    ExprPtr condition = p.expression();
    p.expect_end();
    for (;;) {
      std::string ended;
      Body b = body({"elif", "else", "endif"}, ended);
      n->branches.emplace_back(std::move(condition), std::move(b));
      if (ended == "endif") break;
      if (ended == "else") {
        stop_->expect_end();
        n->branches.emplace_back(nullptr, body({"endif"}, ended));
        break;
      }
      condition = stop_->expression();
    }
    stop_->expect_end();
    return n;
  }

  NodePtr for_statement(ExprParser& p, int line) {
    auto n = node(Node::Kind::loop, line);
    do n->names.push_back(p.name());
    while (p.skip_op(","));
    if (!p.skip_name("in")) fail(p.where(), ": expected 'in' in a for loop");
    n->expr = p.or_expr();
    if (p.skip_name("if")) n->condition = p.or_expr();
    if (p.skip_name("recursive")) fail(p.where(), ": recursive loops are not supported");
    p.expect_end();
    ++loops_;
    std::string ended;
    n->body = body({"else", "endfor"}, ended);
    --loops_;
    if (ended == "else") {
      stop_->expect_end();
      n->else_body = body({"endfor"}, ended);
    }
    stop_->expect_end();
    return n;
  }

  NodePtr set_statement(ExprParser& p, int line) {
    auto n = node(Node::Kind::set, line);
    n->names.push_back(p.name());
    if (p.skip_op(".")) {
      n->attribute = p.name();
    } else {
      while (p.skip_op(",")) n->names.push_back(p.name());
    }
    if (p.skip_op("=")) {
      n->expr = p.expression();
      p.expect_end();
      return n;
    }
    p.expect_end();  // {% set name %}...{% endset %}
    n->kind = Node::Kind::set_block;
    const int loops = std::exchange(loops_, 0);
    std::string ended;
    n->body = body({"endset"}, ended);
    loops_ = loops;
    stop_->expect_end();
    return n;
  }

  NodePtr macro_statement(ExprParser& p, int line) {
    auto n = node(Node::Kind::macro, line);
    n->macro_name = p.name();
    p.expect_op("(");
    while (!p.skip_op(")")) {
      if (!n->params.empty()) p.expect_op(",");
      if (p.skip_op(")")) break;
      std::string param = p.name();
      n->params.emplace_back(std::move(param), p.skip_op("=") ? p.expression() : nullptr);
    }
    p.expect_end();
    const int loops = std::exchange(loops_, 0);
    std::string ended;
    n->body = body({"endmacro"}, ended);
    loops_ = loops;
    stop_->expect_end();
    return n;
  }

  std::vector<Piece> pieces_;
  const std::string& origin_;
  size_t next_ = 0;
  int depth_ = 0, loops_ = 0;
  std::unique_ptr<ExprParser> stop_;  // the tag that ended the last body
};
}  // namespace

Program parse_template(std::string_view source, const std::string& origin) {
  return BlockParser(split_template(source, origin), origin).run();
}

}  // namespace gattn::jinja
