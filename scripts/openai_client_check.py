#!/usr/bin/env python3
"""Checks gattn serve with the official `openai` Python client, as a real client uses it.

Makes tools/reference/.venv-serve with `openai` from PyPI (once; scripts/setup.sh makes it too)
and reruns itself there, starts `gattn serve` on a free loopback port (with --api-key, a key the
client must send), runs models, completions (greedy, sampled with a seed, stop strings, echo +
logprobs), streaming, chat (when the tokenizer has ChatML's tokens: with --thinking, Qwen3.5's
built-in template with thinking on and off, reasoning_content apart from the answer, streamed and
not, and chat logprobs), bad requests and a wrong key, checks every answer, and always stops the
server. Exits 1 on the first failed check. A CI test (cli.serve_openai) runs it.

  scripts/openai_client_check.py --gattn build/gattn --checkpoint runs/tiny [--chat [--thinking]]
"""
import argparse
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, "..", "tools", "reference", ".venv-serve")
OPENAI = "openai==3.63.0"  # the version these checks were written against
API_KEY = "gattn-check-key"


def ensure_venv():
    try:
        import openai  # noqa: F401
        return
    except ImportError:
        pass
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"openai check: creating {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    if subprocess.run([python, "-c", "import openai"], capture_output=True).returncode != 0:
        subprocess.run([python, "-m", "pip", "install", "-q", OPENAI], check=True)
    os.execv(python, [python] + sys.argv)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(condition, what):
    if not condition:
        raise SystemExit(f"openai check: FAILED: {what}")
    print(f"  ok  {what}")


def run_checks(client, openai, chat, thinking):
    models = client.models.list()
    model = models.data[0].id
    check(len(models.data) == 1, f"models.list names one model ({model})")

    prompt = "In the beginning"
    a = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0)
    b = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0)
    check(a.choices[0].text == b.choices[0].text, "greedy completions repeat")
    check(a.usage.completion_tokens <= 24 and a.usage.prompt_tokens > 0, "usage counts tokens")
    check(a.choices[0].finish_reason in ("length", "stop"), "finish_reason is length or stop")

    s1 = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0.9,
                                   seed=11)
    s2 = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0.9,
                                   seed=11)
    check(s1.choices[0].text == s2.choices[0].text, "sampling with a seed repeats")

    pieces = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0,
                                       stream=True)
    streamed = "".join(chunk.choices[0].text for chunk in pieces)
    check(streamed == a.choices[0].text, "a streamed completion equals the whole one")

    text = a.choices[0].text
    if len(text) > 6:
        stop = text[3:6]
        c = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0,
                                      stop=[stop])
        check(c.choices[0].text == text[:text.find(stop)] and c.choices[0].finish_reason == "stop",
              "a stop string cuts the text before it")

    e = client.completions.create(model=model, prompt="And God said, Let there be light",
                                  max_tokens=0, echo=True, logprobs=1)
    lp = e.choices[0].logprobs
    check(lp.token_logprobs[0] is None and all(x <= 0 for x in lp.token_logprobs[1:]),
          f"echo + logprobs scores the prompt ({len(lp.tokens)} tokens, "
          f"sum {sum(lp.token_logprobs[1:]):.2f} nats)")
    check(e.choices[0].text == "And God said, Let there be light", "echo returns the prompt")

    for bad, what in [({"max_tokens": -1}, "negative max_tokens"),
                      ({"max_tokens": 10 ** 9}, "a prompt over the context"),
                      ({"extra_body": {"bogus": 1}}, "an unknown field")]:
        try:
            client.completions.create(model=model, prompt=prompt, **bad)
            check(False, f"{what} is refused")
        except openai.BadRequestError as err:
            check(err.status_code == 400, f"{what} is refused with 400: "
                  f"{err.body.get('message') if isinstance(err.body, dict) else err.body}")

    messages = [{"role": "system", "content": "You are brief."},
                {"role": "user", "content": "Who made the heavens?"}]
    if not chat:
        try:
            client.chat.completions.create(model=model, messages=messages, max_tokens=8)
            check(False, "chat without ChatML tokens is refused")
        except openai.BadRequestError:
            check(True, "chat is refused with 400: the tokenizer has no ChatML tokens")
        return
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=24,
                                       temperature=0, logprobs=True, top_logprobs=2)
    check(r.choices[0].message.role == "assistant", "chat answers as the assistant")
    check(len(r.choices[0].logprobs.content) > 0 and
          all(len(t.top_logprobs) == 2 for t in r.choices[0].logprobs.content),
          "chat logprobs give each token two alternatives")
    chunks = client.chat.completions.create(model=model, messages=messages, max_tokens=24,
                                            temperature=0, stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    check(streamed == r.choices[0].message.content, "a streamed chat equals the whole one")
    if thinking:
        thinking_checks(client, model, messages)


def reasoning_of(message_or_delta):
    return (message_or_delta.model_extra or {}).get("reasoning_content")


def thinking_checks(client, model, messages):
    """Qwen3.5's template: thinking on opens <think> in the prompt, so this model's reply (no
    </think> in 24 tokens) is all reasoning; off, the prompt closes an empty block."""
    on = client.chat.completions.create(model=model, messages=messages, max_tokens=24,
                                        temperature=0)
    reasoning = reasoning_of(on.choices[0].message)
    check(reasoning and on.choices[0].message.content == "",
          f"thinking on: the reply is reasoning_content ({len(reasoning or '')} characters)")
    chunks = client.chat.completions.create(model=model, messages=messages, max_tokens=24,
                                            temperature=0, stream=True)
    streamed = "".join(reasoning_of(c.choices[0].delta) or "" for c in chunks if c.choices)
    check(streamed == reasoning, "thinking on, streamed: the reasoning deltas make the same text")
    off = client.chat.completions.create(
        model=model, messages=messages, max_tokens=24, temperature=0,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    check(reasoning_of(off.choices[0].message) is None and off.choices[0].message.content,
          "thinking off (chat_template_kwargs): the reply is content, no reasoning_content")
    check(off.usage.prompt_tokens > on.usage.prompt_tokens,
          f"thinking off closes an empty <think> block ({on.usage.prompt_tokens} -> "
          f"{off.usage.prompt_tokens} prompt tokens)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gattn", default="build/gattn")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--chat", action="store_true", help="the tokenizer has ChatML tokens")
    p.add_argument("--thinking", action="store_true",
                   help="with --chat: serve with the qwen3_5 template and check thinking on/off")
    args = p.parse_args()
    ensure_venv()
    import openai

    port = free_port()
    argv = [os.path.abspath(args.gattn), "serve", "--checkpoint", args.checkpoint, "--port",
            str(port), "--parallel", "2", "--api-key", API_KEY]
    if args.thinking:
        argv += ["--chat-template", "qwen3_5"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        client = openai.OpenAI(base_url=base_url, api_key=API_KEY, timeout=60, max_retries=0)
        for _ in range(300):
            if proc.poll() is not None:
                raise SystemExit(f"openai check: gattn serve exited: {proc.stderr.read()}")
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                time.sleep(0.1)
        print(f"openai check: openai {openai.__version__} against gattn serve on port {port}")
        try:
            openai.OpenAI(base_url=base_url, api_key="wrong", max_retries=0).models.list()
            check(False, "a wrong API key is refused")
        except openai.AuthenticationError as err:
            check(err.status_code == 401, "a wrong API key is refused with 401")
        run_checks(client, openai, args.chat, args.thinking)
        print("openai check: all checks passed")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
