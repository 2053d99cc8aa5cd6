// The official OpenAI JavaScript client against `tessera serve
// --is-embedding` (run by tests/e2e/embeddings_test.cc). The client asks
// for base64 by default and decodes it; the vectors must equal the float
// ones. Exit code: the number of failed checks.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.TESSERA_BASE_URL + "/v1",
  apiKey: "unused",
  timeout: 60000,
  maxRetries: 0,
});
const model = process.env.TESSERA_MODEL;
let failed = 0;
function check(name, ok, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : " " + detail}`);
  if (!ok) failed++;
}

const inputs = ["hello world", "a second, longer input for the batch"];
const b64 = await client.embeddings.create({ model, input: inputs });
const floats = await client.embeddings.create({ model, input: inputs, encoding_format: "float" });
check("two vectors", b64.data.length === 2 && floats.data.length === 2);
check("object and index", b64.data.every((d, i) => d.object === "embedding" && d.index === i));
const same = b64.data.every((d, i) =>
  d.embedding.length === floats.data[i].embedding.length &&
  d.embedding.every((x, k) => Math.abs(x - floats.data[i].embedding[k]) < 1e-5));
// (The second request reuses cached prefixes: equal up to rounding.)
check("base64 decodes to the float vectors", same);
const norm = Math.sqrt(floats.data[0].embedding.reduce((s, x) => s + x * x, 0));
check("normalized", Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
check("usage", b64.usage.prompt_tokens > 0 && b64.usage.total_tokens === b64.usage.prompt_tokens);
const short = await client.embeddings.create({ model, input: "x", dimensions: 8 });
check("dimensions", short.data[0].embedding.length === 8);
try {
  await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
  check("chat refused", false, "no error");
} catch (e) {
  check("chat refused", e instanceof OpenAI.BadRequestError, String(e));
}
if (failed === 0) console.log("all checks passed");
process.exit(failed);
