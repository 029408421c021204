// Template::render: runs the statements of a parsed template with Jinja's scoping (a for loop's
// body and a macro call get scopes of their own; if does not) and Python's value semantics.
#include <map>

#include "infer/jinja/builtins.h"
#include "infer/jinja/parser.h"
#include "infer/jinja/template.h"
#include "util/error.h"

namespace gattn::jinja {

namespace {
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent_.get())
      for (const auto& [k, v] : s->vars_)
        if (k == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, old] : vars_)
      if (k == name) {
        old = std::move(v);
        return;
      }
    vars_.emplace_back(name, std::move(v));
  }

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

class Renderer {
 public:
  Renderer(const Variables& variables, const std::string& origin)
      : origin_(origin), globals_(std::make_shared<Scope>(nullptr)) {
    for (const auto& [k, v] : variables) globals_->set(k, v);
  }

  Text run(const Program& p) {
    Text out;
    const ScopePtr top = std::make_shared<Scope>(globals_);
    exec(p.body, top, out);
    return out;
  }

 private:
  enum class Flow { normal, broke, continued };

  const std::string& where(int line) {
    auto it = where_.find(line);
    if (it == where_.end()) it = where_.emplace(line, cat(origin_, ":", line)).first;
    return it->second;
  }
  void step(int line) {
    if (++steps_ > kMaxSteps)
      fail(where(line), ": the template ran more than ", kMaxSteps, " steps");
  }
  void emit(Text& out, const Text& t, int line) {
    out.append(t);
    if (out.s.size() > kMaxOutputBytes)
      fail(where(line), ": the template's output passed ", kMaxOutputBytes, " bytes");
  }

  Flow exec(const Body& body, const ScopePtr& scope, Text& out) {
    for (const NodePtr& n : body) {
      const Flow f = exec(*n, scope, out);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  Flow exec(const Node& n, const ScopePtr& scope, Text& out) {
    step(n.line);
    switch (n.kind) {
      case Node::Kind::text:
        emit(out, {.s = n.text, .data = {}}, n.line);
        return Flow::normal;
      case Node::Kind::output:
        emit(out, eval(*n.expr, scope).to_text(), n.line);
        return Flow::normal;
      case Node::Kind::branches:
        for (const auto& [condition, body] : n.branches)
          if (!condition || eval(*condition, scope).truthy()) return exec(body, scope, out);
        return Flow::normal;
      case Node::Kind::loop:
        return loop(n, scope, out);
      case Node::Kind::set:
        assign(n, eval(*n.expr, scope), scope);
        return Flow::normal;
      case Node::Kind::set_block: {
        Text captured;
        exec(n.body, scope, captured);
        assign(n, Value::string(std::move(captured)), scope);
        return Flow::normal;
      }
      case Node::Kind::macro:
        scope->set(n.macro_name, macro(n, scope));
        return Flow::normal;
      case Node::Kind::loop_break:
        return Flow::broke;
      case Node::Kind::loop_continue:
        return Flow::continued;
    }
    return Flow::normal;
  }

  // Binds a loop's or a set's names: one name, or a tuple unpacked.
  void bind(const std::vector<std::string>& names, const Value& v, Scope& scope, int line) {
    if (names.size() == 1) return scope.set(names[0], v);
    const List items = iterate(v, where(line));
    if (items.size() != names.size())
      fail(where(line), ": cannot unpack ", items.size(), " values into ", names.size(), " names");
    for (size_t i = 0; i < names.size(); ++i) scope.set(names[i], items[i]);
  }

  void assign(const Node& n, Value v, const ScopePtr& scope) {
    if (n.attribute.empty()) return bind(n.names, v, *scope, n.line);
    const Value* target = scope->find(n.names[0]);
    if (!target || !target->is(Value::Kind::ns))
      fail(where(n.line), ": '", n.names[0], "' is not a namespace(), so '", n.names[0], ".",
           n.attribute, "' cannot be set");
    if (v.holds_namespace())  // no cycles: a namespace never holds one
      fail(where(n.line), ": a namespace cannot hold a namespace ('", n.names[0], ".", n.attribute,
           "')");
    target->ns_entries().set(n.attribute, std::move(v));
  }

  Flow loop(const Node& n, const ScopePtr& scope, Text& out) {
    List items = iterate(eval(*n.expr, scope), where(n.line));
    if (n.condition) {
      List kept;
      for (const Value& v : items) {
        const ScopePtr s = std::make_shared<Scope>(scope);
        bind(n.names, v, *s, n.line);
        if (eval(*n.condition, s).truthy()) kept.push_back(v);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(n.else_body, scope, out);
    const int64_t length = int64_t(items.size());
    for (int64_t i = 0; i < length; ++i) {
      step(n.line);
      const ScopePtr s = std::make_shared<Scope>(scope);
      bind(n.names, items[size_t(i)], *s, n.line);
      Dict info;
      info.set("index", Value::integer(i + 1));
      info.set("index0", Value::integer(i));
      info.set("revindex", Value::integer(length - i));
      info.set("revindex0", Value::integer(length - i - 1));
      info.set("first", Value::boolean(i == 0));
      info.set("last", Value::boolean(i == length - 1));
      info.set("length", Value::integer(length));
      if (i > 0) info.set("previtem", items[size_t(i - 1)]);
      if (i + 1 < length) info.set("nextitem", items[size_t(i + 1)]);
      s->set("loop", Value::dict(std::move(info)));
      if (exec(n.body, s, out) == Flow::broke) break;
    }
    return Flow::normal;
  }

  // The macro holds its scope weakly: the scope holds the macro, and a strong hold both ways
  // would never be freed.
  Value macro(const Node& n, const ScopePtr& defined_in) {
    return Value::function([this, &n, home = std::weak_ptr<Scope>(defined_in)](CallArgs& call) {
      const ScopePtr parent = home.lock();
      if (!parent)
        fail(where(n.line), ": macro '", n.macro_name, "' is called after its scope ended");
      if (call.positional.size() > n.params.size())
        fail(where(n.line), ": macro '", n.macro_name, "' takes ", n.params.size(),
             " arguments, got ", call.positional.size());
      if (++call_depth_ > kMaxCallDepth)
        fail(where(n.line), ": macros nested deeper than ", kMaxCallDepth);
      const ScopePtr s = std::make_shared<Scope>(parent);
      for (size_t i = 0; i < n.params.size(); ++i) {
        const auto& [name, fallback] = n.params[i];
        Value v = i < call.positional.size() ? call.positional[i] : Value();
        for (const auto& [k, x] : call.named)
          if (k == name) v = x;
        if (i >= call.positional.size() && v.is_undefined() && fallback) v = eval(*fallback, s);
        s->set(name, std::move(v));
      }
      for (const auto& named : call.named)  // (clang 14 captures no structured binding)
        if (std::none_of(n.params.begin(), n.params.end(),
                         [&](const auto& p) { return p.first == named.first; }))
          fail(where(n.line), ": macro '", n.macro_name, "' has no parameter '", named.first, "'");
      Text out;
      exec(n.body, s, out);
      --call_depth_;
      return Value::string(std::move(out));
    });
  }

  Value lookup(const std::string& name, const ScopePtr& scope, int line) {
    if (const Value* v = scope->find(name)) return *v;
    return global(name, where(line));
  }

  Value attribute(const Value& object, const std::string& name, int line) {
    if (object.is_undefined())
      fail(where(line), ": an undefined value has no attribute '", name, "'");
    const bool dict_method = name == "items" || name == "keys" || name == "values" || name == "get";
    if (object.is(Value::Kind::dict) && dict_method) return method(object, name, where(line));
    if (object.is(Value::Kind::dict) || object.is(Value::Kind::ns)) {
      const Value* v = object.entries().find(name);
      return v ? *v : Value();
    }
    return method(object, name, where(line));
  }

  CallArgs arguments(const Expr& e, const ScopePtr& scope, size_t first) {
    CallArgs a;
    for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i], scope));
    for (const auto& [k, x] : e.named) a.named.emplace_back(k, eval(*x, scope));
    return a;
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    step(e.line);
    const auto arg = [&](size_t i) { return e.args[i] ? eval(*e.args[i], scope) : Value(); };
    switch (e.op) {
      case Expr::Op::literal:
        return e.value;
      case Expr::Op::name:
        return lookup(e.name, scope, e.line);
      case Expr::Op::list:
        return Value::list(arguments(e, scope, 0).positional);
      case Expr::Op::dict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value key = arg(i);
          if (!key.is_string()) fail(where(e.line), ": a dict's keys must be strings");
          d.set(key.str(), arg(i + 1));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Op::attribute:
        return attribute(arg(0), e.name, e.line);
      case Expr::Op::index:
        return item(arg(0), arg(1), where(e.line));
      case Expr::Op::slice:
        return slice(arg(0), arg(1), arg(2), arg(3), where(e.line));
      case Expr::Op::call: {
        const Value callee = arg(0);
        if (!callee.is(Value::Kind::function))
          fail(where(e.line), ": a value of type ", callee.kind_name(), " is not callable",
               e.args[0]->op == Expr::Op::name ? cat(" ('", e.args[0]->name, "')") : "");
        CallArgs a = arguments(e, scope, 1);
        return callee.fn()(a);
      }
      case Expr::Op::filter: {
        const Value input = arg(0);
        CallArgs a = arguments(e, scope, 1);
        return apply_filter(e.name, input, a, where(e.line));
      }
      case Expr::Op::test: {
        const Value input = arg(0);
        CallArgs a = arguments(e, scope, 1);
        return Value::boolean(apply_test(e.name, input, a, where(e.line)) != e.negated);
      }
      case Expr::Op::negate:
        return Value::boolean(!arg(0).truthy());
      case Expr::Op::minus:
        return binary_op("-", Value::integer(0), arg(0), where(e.line));
      case Expr::Op::binary:
        return binary_op(e.name, arg(0), arg(1), where(e.line));
      case Expr::Op::both: {
        Value a = arg(0);
        return a.truthy() ? arg(1) : a;
      }
      case Expr::Op::either: {
        Value a = arg(0);
        return a.truthy() ? a : arg(1);
      }
      case Expr::Op::conditional:
        return arg(0).truthy() ? arg(1) : arg(2);
    }
    return Value();
  }

  const std::string& origin_;
  ScopePtr globals_;
  std::map<int, std::string> where_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
};
}  // namespace

Template::Template(std::string_view source, std::string origin)
    : origin_(std::move(origin)),
      program_(std::make_shared<const Program>(parse_template(source, origin_))) {}

Text Template::render(const Variables& variables) const {
  return Renderer(variables, origin_).run(*program_);
}

}  // namespace gattn::jinja
