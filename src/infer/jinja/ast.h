// The parsed form of a Jinja template: statements (text, output, if, for, set, macro) holding
// expressions. Made by parse_template() (parser.h), run by render() (template.h).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "infer/jinja/value.h"

namespace gattn::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using NamedExprs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Op {
    literal,     // value
    name,        // name
    list,        // [args...]
    dict,        // {named...}: keys are args[2i], values args[2i + 1]
    attribute,   // args[0].name
    index,       // args[0][args[1]]
    slice,       // args[0][args[1]:args[2]:args[3]] (absent parts null)
    call,        // args[0](args[1...], named...)
    filter,      // args[0] | name(args[1...], named...)
    test,        // args[0] is [not] name(args[1...])
    negate,      // not args[0]
    minus,       // -args[0]
    binary,      // args[0] name args[1]: + - * / // % ** ~ == != < > <= >= in, "not in"
    both,        // args[0] and args[1]
    either,      // args[0] or args[1]
    conditional  // args[1] if args[0] else args[2] (args[2] null: undefined)
  };
  Op op = Op::literal;
  int line = 0;
  Value value = {};
  std::string name = {};
  std::vector<ExprPtr> args = {};
  NamedExprs named = {};
  bool negated = false;  // "is not"
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    text,
    output,
    branches,
    loop,
    set,
    set_block,
    macro,
    loop_break,
    loop_continue
  };
  Kind kind = Kind::text;
  int line = 0;
  std::string text = {};  // text
  ExprPtr expr = {};      // output; set's value; loop's iterable
  // branches: if / elif conditions with their bodies; an else has no condition.
  std::vector<std::pair<ExprPtr, Body>> branches = {};
  // loop: the loop variables; set / set_block: the names assigned (one, or a tuple), or with
  // `attribute` non-empty, names[0].attribute.
  std::vector<std::string> names = {};
  std::string attribute = {};
  ExprPtr condition = {};  // loop: for x in y if condition
  Body body = {}, else_body = {};
  std::string macro_name = {};
  NamedExprs params = {};  // macro parameters with their defaults (null: none)
};

struct Program {
  Body body;
};

}  // namespace gattn::jinja
