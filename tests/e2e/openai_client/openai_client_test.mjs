// End-to-end checks of a running `tessera serve` with the OFFICIAL OpenAI
// JavaScript client (npm package `openai`, pinned in /package.json): proves
// that an unmodified OpenAI client can list models, complete, chat, stream,
// sample n choices, read logprobs, send tool conversations and gets the
// documented error classes.
//
// Usage: TESSERA_BASE_URL=http://127.0.0.1:PORT TESSERA_API_KEY=KEY \
//          node tests/e2e/openai_client/openai_client_test.mjs
// The server must serve the built-in demo model "tessera-demo" (random
// weights: the text is gibberish, so checks compare responses with each
// other, never with expected words). TESSERA_API_KEY must be the server's
// --api-key (the wrong-key check needs the server to require one).
//
// Every check prints "ok <name>" or "FAIL <name>: <why>"; the exit code is
// the number of failed checks (capped at 100), 2 for a bad environment.
import assert from "node:assert/strict";

import OpenAI from "openai";

const kModel = "tessera-demo";

const base_url = process.env.TESSERA_BASE_URL;
const api_key = process.env.TESSERA_API_KEY;
if (!base_url || !api_key) {
  console.error(
      "set TESSERA_BASE_URL (e.g. http://127.0.0.1:8000) and TESSERA_API_KEY " +
      "(the server's --api-key) to run these checks");
  process.exit(2);
}

// maxRetries 0: an error status must surface at once, not after back-off.
const client = new OpenAI({
  baseURL: `${base_url.replace(/\/+$/, "")}/v1`,
  apiKey: api_key,
  maxRetries: 0,
  timeout: 120_000,
});

const failures = [];

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures.push(name);
    const detail = err instanceof OpenAI.APIError ?
        `${err.constructor.name} status=${err.status}: ${err.message}` :
        (err?.stack ?? String(err));
    console.log(`FAIL ${name}: ${detail}`);
  }
}

// Awaits `promise_fn()` and asserts it rejects with `cls` and `status`;
// returns the error for further checks.
async function expectApiError(promise_fn, cls, status) {
  let caught = null;
  try {
    await promise_fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught !== null, `expected ${cls.name}, but the call succeeded`);
  assert.ok(caught instanceof cls,
            `expected ${cls.name}, got ${caught?.constructor?.name}: ` +
                `${caught?.message}`);
  assert.equal(caught.status, status);
  assert.equal(typeof caught.message, "string");
  assert.ok(caught.error && typeof caught.error.message === "string",
            "error body lacks error.message");
  return caught;
}

function assertUsage(usage, completion_tokens) {
  assert.ok(usage, "usage missing");
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0,
            `prompt_tokens=${usage.prompt_tokens}`);
  assert.equal(usage.completion_tokens, completion_tokens);
  assert.equal(usage.total_tokens,
               usage.prompt_tokens + usage.completion_tokens);
}

// Collects a chat stream: per-choice text, finish reasons, roles, usage.
async function collectChatStream(stream) {
  const out = {text: {}, finish: {}, role: {}, usage: null, ids: new Set(),
               chunks: 0, after_usage: 0, tool_call_deltas: 0};
  for await (const chunk of stream) {
    ++out.chunks;
    if (out.usage) ++out.after_usage;
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.equal(chunk.model, kModel);
    out.ids.add(chunk.id);
    for (const c of chunk.choices) {
      if (c.delta.role !== undefined) {
        assert.equal(out.text[c.index], undefined,
                     `role delta after content for choice ${c.index}`);
        out.role[c.index] = c.delta.role;
      }
      out.text[c.index] = (out.text[c.index] ?? "") + (c.delta.content ?? "");
      if (c.delta.tool_calls?.length) ++out.tool_call_deltas;
      if (c.finish_reason) out.finish[c.index] = c.finish_reason;
    }
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0, "usage chunk carries choices");
      out.usage = chunk.usage;
    }
  }
  return out;
}

const kMessages = [
  {role: "system", content: "You are a terse assistant."},
  {role: "user", content: "Name three colours."},
];

const kWeatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city.",
    parameters: {
      type: "object",
      properties: {city: {type: "string"}, unit: {type: "string"}},
      required: ["city"],
    },
  },
};

// A conversation where the assistant called get_weather and the tool
// answered; `args` and `result` vary so prompt sizes prove what is rendered.
function toolConversation(args, result) {
  return [
    {role: "user", content: "What is the weather in Paris?"},
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_0",
        type: "function",
        function: {name: "get_weather", arguments: JSON.stringify(args)},
      }],
    },
    {role: "tool", tool_call_id: "call_0", content: JSON.stringify(result)},
  ];
}

// ---------------------------------------------------------------- models
await check("models.list has tessera-demo", async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, "model");
    ids.push(m.id);
  }
  assert.ok(ids.includes(kModel), `models: ${JSON.stringify(ids)}`);
});

await check("models.retrieve(id) and an unknown id -> NotFoundError", async () => {
  const m = await client.models.retrieve(kModel);
  assert.equal(m.id, kModel);
  assert.equal(m.object, "model");
  const err = await expectApiError(() => client.models.retrieve("no-such"),
                                   OpenAI.NotFoundError, 404);
  assert.equal(err.code, "model_not_found");
});

// ----------------------------------------------------------- completions
const kPrompt = "The quick brown fox";
const kMaxTokens = 8;
const greedy_completion = {model: kModel, prompt: kPrompt,
                           max_tokens: kMaxTokens, temperature: 0};
let completion_text = null;

await check("completions.create non-stream", async () => {
  const r = await client.completions.create(greedy_completion);
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.object, "text_completion");
  assert.equal(r.model, kModel);
  assert.ok(Number.isInteger(r.created));
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(typeof r.choices[0].text, "string");
  assert.ok(r.choices[0].text.length > 0, "empty text");
  assert.equal(r.choices[0].finish_reason, "length");
  assertUsage(r.usage, kMaxTokens);
  completion_text = r.choices[0].text;
});

await check("completions default to 16 tokens; system_fingerprint", async () => {
  const r = await client.completions.create(
      {model: kModel, prompt: kPrompt, temperature: 0, ignore_eos: true});
  assert.equal(r.usage.completion_tokens, 16);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.match(r.system_fingerprint, /^fp_[0-9a-f]{10}$/);
});

await check("completions temperature 0 is deterministic", async () => {
  const a = await client.completions.create(greedy_completion);
  const b = await client.completions.create(greedy_completion);
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.equal(a.choices[0].text, completion_text);
});

await check("completions stream equals non-stream, usage chunk", async () => {
  const stream = await client.completions.create(
      {...greedy_completion, stream: true,
       stream_options: {include_usage: true}});
  let text = "", finish = null, usage = null, chunks = 0, after_usage = 0;
  for await (const chunk of stream) {
    ++chunks;
    if (usage) ++after_usage;
    assert.equal(chunk.object, "text_completion");
    for (const c of chunk.choices) {
      assert.equal(c.index, 0);
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0, "usage chunk carries choices");
      usage = chunk.usage;
    }
  }
  assert.ok(chunks >= 2, `only ${chunks} chunks`);
  assert.equal(text, completion_text);
  assert.equal(finish, "length");
  assertUsage(usage, kMaxTokens);
  assert.equal(after_usage, 0, "chunks after the usage chunk");
});

await check("completions stream without include_usage has no usage",
            async () => {
  const stream = await client.completions.create(
      {...greedy_completion, stream: true});
  let text = "";
  for await (const chunk of stream) {
    assert.ok(!chunk.usage, "usage sent without include_usage");
    for (const c of chunk.choices) text += c.text;
  }
  assert.equal(text, completion_text);
});

await check("completions prompt array gives one choice per prompt",
            async () => {
  const r = await client.completions.create(
      {...greedy_completion, prompt: [kPrompt, "Once upon a time"]});
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1]);
  assert.equal(r.choices.find((c) => c.index === 0).text, completion_text);
  assert.equal(r.usage.completion_tokens, 2 * kMaxTokens);
});

await check("completions logprobs shape", async () => {
  const k = 3;
  const r = await client.completions.create(
      {...greedy_completion, logprobs: k});
  const lp = r.choices[0].logprobs;
  assert.ok(lp, "logprobs missing");
  const n = r.usage.completion_tokens;
  assert.equal(lp.tokens.length, n);
  assert.equal(lp.token_logprobs.length, n);
  assert.equal(lp.top_logprobs.length, n);
  assert.equal(lp.text_offset.length, n);
  assert.equal(lp.text_offset[0], 0);
  for (let i = 0; i < n; ++i) {
    assert.ok(lp.token_logprobs[i] <= 0, `logprob ${lp.token_logprobs[i]}`);
    const top = lp.top_logprobs[i];
    const keys = Object.keys(top);
    // Distinct tokens can render to the same text (e.g. "\uFFFD"), so a
    // position may list fewer than k keys, never more.
    assert.ok(keys.length >= 1 && keys.length <= k, `top: ${keys.length}`);
    // Greedy: the chosen token is the most likely one.
    const best = Math.max(...Object.values(top));
    assert.ok(Math.abs(lp.token_logprobs[i] - best) < 1e-4,
              `token ${i} logprob ${lp.token_logprobs[i]} < best ${best}`);
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
  }
});

// ---------------------------------------------------------------- chat
const greedy_chat = {model: kModel, messages: kMessages,
                     max_tokens: kMaxTokens, temperature: 0};
let chat_text = null, chat_usage = null;

await check("chat.completions.create non-stream", async () => {
  const r = await client.chat.completions.create(greedy_chat);
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, "chat.completion");
  assert.equal(r.model, kModel);
  assert.equal(r.choices.length, 1);
  const m = r.choices[0].message;
  assert.equal(m.role, "assistant");
  assert.equal(typeof m.content, "string");
  assert.ok(m.content.length > 0, "empty content");
  assert.ok(!m.tool_calls?.length, "unexpected tool_calls");
  assert.equal(r.choices[0].finish_reason, "length");
  assertUsage(r.usage, kMaxTokens);
  chat_text = m.content;
  chat_usage = r.usage;
  const again = await client.chat.completions.create(greedy_chat);
  assert.equal(again.choices[0].message.content, chat_text);
});

await check("chat max_completion_tokens limits the completion", async () => {
  const {max_tokens, ...rest} = greedy_chat;
  const r = await client.chat.completions.create(
      {...rest, max_completion_tokens: 3});
  assert.equal(r.usage.completion_tokens, 3);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.ok(chat_text.startsWith(r.choices[0].message.content),
            `"${r.choices[0].message.content}" is not a prefix of ` +
                `"${chat_text}"`);
});

await check("chat stream (stream: true + for await) equals non-stream",
            async () => {
  const stream = await client.chat.completions.create(
      {...greedy_chat, stream: true, stream_options: {include_usage: true}});
  const s = await collectChatStream(stream);
  assert.equal(s.ids.size, 1, "chunks carry different ids");
  assert.equal(s.role[0], "assistant", "no role chunk");
  assert.ok(s.chunks >= 3, `only ${s.chunks} chunks`);
  assert.equal(s.text[0], chat_text);
  assert.equal(s.finish[0], "length");
  assertUsage(s.usage, kMaxTokens);
  // cached_tokens may differ: the earlier identical request warmed the
  // prefix cache.
  assert.equal(s.usage.prompt_tokens, chat_usage.prompt_tokens);
  assert.equal(s.after_usage, 0, "chunks after the usage chunk");
});

await check("chat stream helper finalChatCompletion", async () => {
  const runner = client.chat.completions.stream(greedy_chat);
  let deltas = "";
  runner.on("content", (delta) => { deltas += delta; });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, chat_text);
  assert.equal(final.choices[0].message.role, "assistant");
  assert.equal(final.choices[0].finish_reason, "length");
  assert.equal(deltas, chat_text);
});

await check("chat stream abandoned mid-way, server keeps serving",
            async () => {
  const stream = await client.chat.completions.create(
      {...greedy_chat, max_tokens: 200, stream: true});
  let seen = 0;
  for await (const chunk of stream) {
    if (++seen === 3) break;  // closes the connection
  }
  assert.equal(seen, 3);
  const r = await client.chat.completions.create(greedy_chat);
  assert.equal(r.choices[0].message.content, chat_text);
});

// ------------------------------------------------------ n and seeds
const seeded = {model: kModel, messages: kMessages, max_tokens: 6,
                temperature: 1.0, n: 2, seed: 1234};

await check("chat n=2 with seed is reproducible", async () => {
  const a = await client.chat.completions.create(seeded);
  const b = await client.chat.completions.create(seeded);
  assert.equal(a.choices.length, 2);
  assert.deepEqual(a.choices.map((c) => c.index).sort(), [0, 1]);
  const texts = (r) => [0, 1].map(
      (i) => r.choices.find((c) => c.index === i).message.content);
  assert.deepEqual(texts(a), texts(b));
  assert.notEqual(texts(a)[0], texts(a)[1],
                  "the two sampled choices are identical");
  assert.equal(a.usage.completion_tokens, 2 * seeded.max_tokens);
  const stream = await client.chat.completions.create(
      {...seeded, stream: true, stream_options: {include_usage: true}});
  const s = await collectChatStream(stream);
  assert.deepEqual([s.text[0], s.text[1]], texts(a));
  assert.deepEqual([s.role[0], s.role[1]], ["assistant", "assistant"]);
  assert.deepEqual([s.finish[0], s.finish[1]], ["length", "length"]);
  assert.equal(s.usage.completion_tokens, 2 * seeded.max_tokens);
});

// ------------------------------------------------------------ logprobs
await check("chat logprobs/top_logprobs shape", async () => {
  const k = 3;
  const r = await client.chat.completions.create(
      {...greedy_chat, logprobs: true, top_logprobs: k});
  const content = r.choices[0].logprobs?.content;
  assert.ok(Array.isArray(content), "logprobs.content missing");
  assert.equal(content.length, r.usage.completion_tokens);
  // `bytes` is the token's raw UTF-8: a character split over several
  // byte-level tokens is whole again once the bytes are concatenated.
  const joined = Buffer.concat(content.map((t) => Buffer.from(t.bytes)));
  assert.equal(joined.toString("utf8"), r.choices[0].message.content,
               "the tokens' bytes do not concatenate to the content " +
                   `(bytes: ${JSON.stringify(content.map((t) => t.bytes))})`);
  for (const t of content) {
    assert.equal(typeof t.token, "string");
    assert.ok(t.logprob <= 0, `logprob ${t.logprob}`);
    assert.ok(Array.isArray(t.bytes) && t.bytes.length > 0, "bytes");
    assert.ok(t.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
    if (!t.token.includes("\uFFFD")) {
      assert.deepEqual(t.bytes, [...Buffer.from(t.token, "utf8")]);
    }
    assert.equal(t.top_logprobs.length, k);
    for (let j = 1; j < k; ++j) {
      assert.ok(t.top_logprobs[j - 1].logprob >= t.top_logprobs[j].logprob,
                "top_logprobs not sorted");
    }
    // Greedy: the chosen token is the first alternative.
    assert.equal(t.top_logprobs[0].token, t.token);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4);
  }
  const plain = await client.chat.completions.create(greedy_chat);
  assert.ok(plain.choices[0].logprobs == null, "logprobs without asking");
});

// --------------------------------------------------------------- tools
await check("SGLang extras on /v1: min_tokens, matched_stop, no_stop_trim",
            async () => {
  // min_tokens holds stop tokens back: make the greedy first token (read
  // from the native /generate) a stop token; alone it ends the completion
  // at once, with min_tokens 5 not before the fifth token.
  const ids = [5, 6, 7, 8];
  const native = await fetch(`${base_url.replace(/\/+$/, "")}/generate`, {
    method: "POST",
    headers: {"Authorization": `Bearer ${api_key}`,
              "Content-Type": "application/json"},
    body: JSON.stringify({input_ids: ids, sampling_params: {
      max_new_tokens: 1, temperature: 0}}),
  });
  assert.equal(native.status, 200);
  const first = (await native.json()).output_ids[0];
  const stopped = await client.completions.create(
      {model: kModel, prompt: ids, max_tokens: 20, temperature: 0,
       stop_token_ids: [first]});
  assert.equal(stopped.usage.completion_tokens, 1);
  assert.equal(stopped.choices[0].matched_stop, first);
  const held = await client.completions.create(
      {model: kModel, prompt: ids, max_tokens: 20, temperature: 0,
       stop_token_ids: [first], min_tokens: 5});
  assert.ok(held.usage.completion_tokens >= 5,
            `${held.usage.completion_tokens}`);
  // A stop string found in the greedy text: matched_stop names it, and
  // no_stop_trim keeps it in the text.
  const free = await client.completions.create(
      {...greedy_completion, max_tokens: 16, ignore_eos: true});
  // One printable ASCII character of it (the demo model's random text may
  // hold partial UTF-8 characters, which are no valid stop string).
  const found = free.choices[0].text.slice(1).match(/[!-~]/);
  assert.ok(found, `no ASCII in ${JSON.stringify(free.choices[0].text)}`);
  const stop = found[0];
  const cut = await client.completions.create(
      {...greedy_completion, max_tokens: 16, ignore_eos: true, stop: [stop]});
  assert.equal(cut.choices[0].finish_reason, "stop");
  assert.equal(cut.choices[0].matched_stop, stop);
  assert.ok(!cut.choices[0].text.endsWith(stop));
  const kept = await client.completions.create(
      {...greedy_completion, max_tokens: 16, ignore_eos: true, stop: [stop],
       no_stop_trim: true});
  assert.equal(kept.choices[0].text, cut.choices[0].text + stop);
});

await check("an unknown field -> BadRequestError 400 naming it", async () => {
  const err = await expectApiError(
      () => client.chat.completions.create({...greedy_chat, max_token: 5}),
      OpenAI.BadRequestError, 400);
  assert.equal(err.param, "max_token");
});

await check("chat tools + tool_choice auto/none accepted", async () => {
  for (const tool_choice of ["auto", "none"]) {
    const r = await client.chat.completions.create(
        {...greedy_chat, tools: [kWeatherTool], tool_choice});
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(typeof r.choices[0].message.content, "string");
    assert.equal(r.choices[0].finish_reason, "length");
    // The tool definitions are part of the rendered prompt.
    assert.ok(r.usage.prompt_tokens > chat_usage.prompt_tokens,
              `tools did not grow the prompt (${r.usage.prompt_tokens} <= ` +
                  `${chat_usage.prompt_tokens}), tool_choice ${tool_choice}`);
  }
  const stream = await client.chat.completions.create(
      {...greedy_chat, tools: [kWeatherTool], tool_choice: "auto",
       stream: true});
  const s = await collectChatStream(stream);
  assert.equal(s.finish[0], "length");
  assert.equal(s.role[0], "assistant");
});

await check("chat multi-turn tool conversation renders and completes",
            async () => {
  const ask = (messages) => client.chat.completions.create(
      {model: kModel, messages, tools: [kWeatherTool], max_tokens: 4,
       temperature: 0});
  const small = await ask(toolConversation({city: "Paris"},
                                           {temperature_c: 21}));
  assert.equal(small.choices[0].message.role, "assistant");
  assert.equal(typeof small.choices[0].message.content, "string");
  assert.equal(small.usage.completion_tokens, 4);
  // A longer tool result and longer call arguments each lengthen the
  // prompt: both messages reach the chat template.
  const long_result = await ask(toolConversation(
      {city: "Paris"},
      {temperature_c: 21, conditions: "sunny with a light westerly breeze"}));
  assert.ok(long_result.usage.prompt_tokens > small.usage.prompt_tokens,
            "the tool message is not rendered");
  const long_args = await ask(toolConversation(
      {city: "Paris", unit: "celsius, hourly, for the whole week"},
      {temperature_c: 21}));
  assert.ok(long_args.usage.prompt_tokens > small.usage.prompt_tokens,
            "the assistant tool_calls are not rendered");
  const user_only = await ask(toolConversation({}, {}).slice(0, 1));
  assert.ok(small.usage.prompt_tokens > user_only.usage.prompt_tokens);
});

await check("chat tool_choice required/named needs a tool-call parser",
            async () => {
  // This server runs without --tool-call-parser: forcing a call is a 400
  // that says what to do (the tool server below forces calls).
  for (const tool_choice of
       ["required", {type: "function", function: {name: "get_weather"}}]) {
    const err = await expectApiError(
        () => client.chat.completions.create(
            {...greedy_chat, tools: [kWeatherTool], tool_choice}),
        OpenAI.BadRequestError, 400);
    assert.equal(err.param, "tool_choice");
    assert.match(err.message, /--tool-call-parser/);
  }
});

// -------------------------------------------------------------- errors
await check("wrong api key -> AuthenticationError 401", async () => {
  const wrong = new OpenAI({baseURL: client.baseURL,
                            apiKey: `${api_key}-wrong`, maxRetries: 0});
  const err = await expectApiError(() => wrong.models.list(),
                                   OpenAI.AuthenticationError, 401);
  assert.equal(err.type, "authentication_error");
  await expectApiError(() => wrong.chat.completions.create(greedy_chat),
                       OpenAI.AuthenticationError, 401);
});

await check("unknown model -> NotFoundError 404", async () => {
  const err = await expectApiError(
      () => client.completions.create({...greedy_completion,
                                       model: "no-such-model"}),
      OpenAI.NotFoundError, 404);
  assert.equal(err.param, "model");
  assert.equal(err.code, "model_not_found");
  // Streaming requests fail before the stream starts, with the same class.
  await expectApiError(
      () => client.chat.completions.create(
          {...greedy_chat, model: "no-such-model", stream: true}),
      OpenAI.NotFoundError, 404);
});

await check("bad temperature -> BadRequestError 400 with param", async () => {
  const err = await expectApiError(
      () => client.chat.completions.create({...greedy_chat,
                                            temperature: -1}),
      OpenAI.BadRequestError, 400);
  assert.equal(err.param, "temperature");
  assert.equal(err.type, "invalid_request_error");
});

await check("response_format json_object and json_schema (strict)",
            async () => {
  // The demo model's weights are random: when an answer ends with "stop"
  // it is the JSON asked for; otherwise it ran out of tokens.
  const schema = {type: "object", properties: {
    colour: {enum: ["red", "green", "blue"]},
    count: {type: "integer", minimum: 0, maximum: 9}},
    required: ["colour", "count"], additionalProperties: false};
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      ...greedy_chat, max_tokens: 64, temperature: 1, seed,
      response_format: {type: "json_schema",
                        json_schema: {name: "colours", schema, strict: true}},
    });
    if (r.choices[0].finish_reason === "stop") {
      const v = JSON.parse(r.choices[0].message.content);
      assert.ok(["red", "green", "blue"].includes(v.colour), JSON.stringify(v));
      assert.ok(Number.isInteger(v.count) && v.count >= 0 && v.count <= 9);
      assert.deepEqual(Object.keys(v).sort(), ["colour", "count"]);
    }
    const o = await client.chat.completions.create({
      ...greedy_chat, max_tokens: 64, temperature: 1, seed,
      response_format: {type: "json_object"},
    });
    if (o.choices[0].finish_reason === "stop") {
      const v = JSON.parse(o.choices[0].message.content);
      assert.equal(typeof v, "object");
      assert.ok(!Array.isArray(v));
    }
  }
  const err = await expectApiError(
      () => client.chat.completions.create({
        ...greedy_chat,
        response_format: {type: "json_schema", json_schema: {
          name: "bad", schema: {type: "object", properties: {a: {not: {}}}}}},
      }),
      OpenAI.BadRequestError, 400);
  assert.equal(err.param, "response_format.json_schema.schema");
  assert.match(err.message, /unsupported JSON Schema keyword 'not'/);
});

// ------------------------------------------------ tool calls from a model
// TESSERA_TOOL_BASE_URL: a server (started with --tool-call-parser qwen) on
// a fixture model whose greedy answer is a get_weather call
// (tests/testing/scripted_chat_model.h). No api key there.
const tool_base_url = process.env.TESSERA_TOOL_BASE_URL;
if (tool_base_url) {
  const tools_client = new OpenAI({baseURL: `${tool_base_url}/v1`,
                                   apiKey: "unused", maxRetries: 0,
                                   timeout: 120 * 1000});
  const tool_request = {
    messages: [{role: "user", content: "Weather in Paris?"}],
    tools: [kWeatherTool], tool_choice: "auto", max_tokens: 16,
    temperature: 0,
  };
  const models = await tools_client.models.list();
  const tool_model = models.data[0].id;

  await check("tool call: non-stream message.tool_calls", async () => {
    const r = await tools_client.chat.completions.create(
        {model: tool_model, ...tool_request});
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.type, "function");
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), {city: "Paris"});
  });

  await check("tool call: tool_choice required / named forces the call",
              async () => {
    for (const tool_choice of
         ["required", {type: "function", function: {name: "get_weather"}}]) {
      const r = await tools_client.chat.completions.create(
          {model: tool_model, ...tool_request, tool_choice,
           parallel_tool_calls: false});
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, "tool_calls", JSON.stringify(choice));
      assert.equal(choice.message.tool_calls.length, 1);
      assert.equal(choice.message.tool_calls[0].function.name, "get_weather");
      const args = JSON.parse(choice.message.tool_calls[0].function.arguments);
      assert.equal(typeof args.city, "string");
    }
    // A parameters schema the engine cannot enforce: 400 naming the tool.
    const err = await expectApiError(
        () => tools_client.chat.completions.create({
          model: tool_model, ...tool_request, tool_choice: "required",
          tools: [{type: "function", function: {name: "f", parameters: {
            type: "object", properties: {a: {not: {}}}}}}]}),
        OpenAI.BadRequestError, 400);
    assert.equal(err.param, "tools");
    assert.match(err.message, /tools\[0\]\.function\.parameters/);
  });

  await check("tool call: streamed deltas assemble to the same call",
              async () => {
    const stream = await tools_client.chat.completions.create(
        {model: tool_model, ...tool_request, stream: true});
    const calls = [];
    let finish = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const t of choice.delta.tool_calls ?? []) {
        calls[t.index] ??= {id: "", name: "", arguments: ""};
        if (t.id) calls[t.index].id = t.id;
        if (t.function?.name) calls[t.index].name += t.function.name;
        if (t.function?.arguments) {
          calls[t.index].arguments += t.function.arguments;
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(finish, "tool_calls");
    assert.equal(calls.length, 1);
    assert.match(calls[0].id, /^call_/);
    assert.equal(calls[0].name, "get_weather");
    assert.deepEqual(JSON.parse(calls[0].arguments), {city: "Paris"});
  });

  await check("tool call: the SDK stream helper's final message", async () => {
    const runner = tools_client.chat.completions.stream(
        {model: tool_model, ...tool_request});
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), {city: "Paris"});
  });

  await check("tool call: result turn sent back completes", async () => {
    const first = await tools_client.chat.completions.create(
        {model: tool_model, ...tool_request});
    const message = first.choices[0].message;
    const r = await tools_client.chat.completions.create({
      model: tool_model, tools: [kWeatherTool], max_tokens: 4,
      temperature: 0,
      messages: [...tool_request.messages, message,
                 {role: "tool", tool_call_id: message.tool_calls[0].id,
                  content: "{\"temperature_c\": 18}"}],
    });
    assert.ok(r.usage.prompt_tokens > first.usage.prompt_tokens);
  });
} else {
  console.log("skip tool calls from a model: TESSERA_TOOL_BASE_URL unset");
}

// --------------------------------------------------------------- result
const total = failures.length;
console.log(total === 0 ? "all checks passed" :
                          `${total} check(s) failed: ${failures.join("; ")}`);
process.exit(Math.min(total, 100));
