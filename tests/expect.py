#!/usr/bin/env python3
"""Runs a test command and passes only when it exits with the expected status AND its output
(stdout and stderr together) matches a regular expression (Python re, '.' matching newlines).
ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status, so a crash that printed the
expected text would pass.

    expect.py --exit N --regex REGEX -- COMMAND [ARG...]"""
import argparse
import re
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit", type=int, required=True, help="the expected exit status")
    parser.add_argument("--regex", default="", help="the output must match it (re.DOTALL)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    a = parser.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        parser.error("no command given")
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = result.stdout.decode("utf-8", "replace")
    sys.stdout.write(output)
    failures = []
    if result.returncode != a.exit:
        failures.append(f"exit status {result.returncode}, expected {a.exit}")
    if a.regex and not re.search(a.regex, output, re.DOTALL):
        failures.append(f"output does not match {a.regex!r}")
    for failure in failures:
        print(f"expect.py: FAILED: {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
