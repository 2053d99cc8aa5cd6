// Writes hf_reference.jsonl: encode/decode cases computed by Hugging Face's
// own tokenizers library (its Node bindings, npm package `tokenizers`,
// version 0.23.2), for the shared Qwen3 and stories260k tokenizers and for
// variants of them that exercise other pipeline components (Metaspace,
// Lowercase/NFKC, ignore_merges, Split behaviours, added-token flags).
// tokenizer_reference_test.cc replays the file against Tessera.
//
// A developer tool, not a build step (the project does not depend on it):
//   npm install tokenizers@0.23.2
//   NODE_PATH=$PWD/node_modules node make_hf_reference.js /path/to/shared \
//       > hf_reference.jsonl
//
// Line kinds:
//   {"kind":"variant","name","base","set":{"/json/pointer": value},
//    "append_added_tokens":[...]}  a tokenizer.json derived from a shared
//                                  one (base, relative to shared/)
//   {"kind":"encode","variant","text","add","ids"}
//   {"kind":"decode","variant","ids","skip","text"}
const { Tokenizer } = require('tokenizers');
const fs = require('fs');

const shared = process.argv[2];
if (!shared) throw new Error('usage: node make_hf_reference.js SHARED_DIR');

const kQwen = 'tokenizers/qwen3/tokenizer.json';
const kStories = 'models/stories260k/tokenizer.json';
const storiesAdded = [
  { id: 512, content: '<mask>', single_word: false, lstrip: true, rstrip: true, normalized: false, special: true },
  { id: 513, content: 'cat', single_word: true, lstrip: false, rstrip: false, normalized: true, special: false },
  { id: 514, content: 'Lily', single_word: false, lstrip: false, rstrip: true, normalized: true, special: false },
];
const variants = [
  { name: 'qwen3', base: kQwen, set: {}, append_added_tokens: [] },
  { name: 'stories260k', base: kStories, set: {}, append_added_tokens: [] },
  {
    name: 'stories_metaspace_first', base: kStories,
    set: {
      '/normalizer': null,
      '/pre_tokenizer': { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
      '/decoder': { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
    },
    append_added_tokens: storiesAdded,
  },
  {
    name: 'stories_metaspace_always_bos_eos', base: kStories,
    set: {
      '/normalizer': null,
      '/pre_tokenizer': { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
      '/post_processor': {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
                 { SpecialToken: { id: '</s>', type_id: 0 } }],
        pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] },
                          '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } },
      },
    },
    append_added_tokens: storiesAdded,
  },
  {
    name: 'stories_nfkc_lowercase_unk', base: kStories,
    set: {
      '/normalizer': { type: 'Sequence', normalizers: [
        { type: 'NFKC' }, { type: 'Lowercase' }, { type: 'Prepend', prepend: '\u2581' },
        { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] },
      '/model/byte_fallback': false,
    },
    append_added_tokens: storiesAdded,
  },
  {
    name: 'qwen_ignore_merges_template', base: kQwen,
    set: {
      '/model/ignore_merges': true,
      '/post_processor': {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<|endoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [],
        special_tokens: { '<|endoftext|>': { id: '<|endoftext|>', ids: [151643], tokens: ['<|endoftext|>'] } },
      },
    },
    append_added_tokens: [
      { id: 151669, content: 'hellox', single_word: true, lstrip: false, rstrip: false, normalized: true, special: false },
      { id: 151670, content: '<|mask|>', single_word: false, lstrip: true, rstrip: false, normalized: false, special: true },
      { id: 14990, content: 'hello', single_word: true, lstrip: false, rstrip: true, normalized: true, special: false },
    ],
  },
  {
    name: 'qwen_gpt2_bytelevel', base: kQwen,
    set: {
      '/normalizer': null,
      '/pre_tokenizer': { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    },
    append_added_tokens: [],
  },
  {
    name: 'qwen_split_behaviours', base: kQwen,
    set: {
      '/normalizer': { type: 'Sequence', normalizers: [
        { type: 'NFD' }, { type: 'Replace', pattern: { Regex: '[0-9]+' }, content: '#' },
        { type: 'Strip', strip_left: true, strip_right: false }] },
      '/pre_tokenizer': { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
        { type: 'Split', pattern: { Regex: '\\p{N}' }, behavior: 'Contiguous', invert: false },
        { type: 'Split', pattern: { Regex: '[.!?]' }, behavior: 'MergedWithNext', invert: false },
        { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Removed', invert: true },
        { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: false }] },
    },
    append_added_tokens: [],
  },
];

function build(v) {
  const j = JSON.parse(fs.readFileSync(shared + '/' + v.base, 'utf8'));
  for (const [pointer, value] of Object.entries(v.set)) {
    const keys = pointer.split('/').slice(1);
    let obj = j;
    for (const k of keys.slice(0, -1)) obj = obj[k];
    obj[keys[keys.length - 1]] = value;
  }
  j.added_tokens = j.added_tokens.concat(v.append_added_tokens);
  return Tokenizer.fromString(JSON.stringify(j));
}

let seed = 20240601;
function rnd(n) { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; }
const frags = ['Hello', 'hello', 'world', 'the', 'The', 'a', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n',
  '\u00a0', '\u3000', '\u2028', '.', ',', '!', '?', '...', '(', ')', '"', "'", "'s", "'S", "'ll", "'RE", 'n\'t',
  '\u017f', '\u212a', '123', '4567890', '3.14', '-42', '0x1F', '你好', '今天天气很好', '日本語', 'カタカナ', '한국어',
  '😀', '👍🏽', '🇫🇷', '👩‍👩‍👧', '🫠', '𝒳', 'é', 'e\u0301', 'A\u030a', '\u212b', 'ﬁ', 'Ⅻ', 'ǅ', 'İ', 'ß', 'ς',
  'العربية', 'हिन्दी', 'ไทย', 'Привет', '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>',
  '<s>', '</s>', '<unk>', '<mask>', ' <mask> ', '<|mask|>', ' <|mask|>', '<|im_', '<0x41>', '\u2581', '_',
  '__init__', '    ', 'x**2', 'cat', ' cat ', 'concat', 'cat_', 'Lily', 'Lily  ', 'hellox', ' hellox!',
  'Once upon a time', 'café', '\u200b', '\ufeff', '\u0000', '\u0007', 'Ġ', 'Ċ'];
const ranges = [[0x20, 0x7f], [0xa0, 0x250], [0x300, 0x370], [0x400, 0x500], [0x600, 0x700],
  [0x900, 0x980], [0x2000, 0x2070], [0x3000, 0x3100], [0x4e00, 0x9fff], [0xac00, 0xd7a3],
  [0x1f300, 0x1f700], [0x0, 0x20]];
function randomText() {
  let t = '';
  if (rnd(3) === 0) {
    const n = 1 + rnd(20);
    for (let k = 0; k < n; k++) {
      const r = ranges[rnd(ranges.length)];
      t += String.fromCodePoint(r[0] + rnd(r[1] - r[0]));
    }
  } else {
    const n = 1 + rnd(12);
    for (let k = 0; k < n; k++) t += frags[rnd(frags.length)];
  }
  return t;
}

(async () => {
  const lines = [];
  for (const v of variants) {
    lines.push(JSON.stringify({ kind: 'variant', ...v }));
    const tok = build(v);
    const base = v.name === 'qwen3' || v.name === 'stories260k';
    const encodes = base ? 250 : 90;
    for (let i = 0; i < encodes; i++) {
      const text = i === 0 ? '' : randomText();
      const add = rnd(2) === 1;
      const enc = await tok.encode(text, null, { addSpecialTokens: add });
      const ids = enc.getIds();
      lines.push(JSON.stringify({ kind: 'encode', variant: v.name, text, add, ids }));
      const skip = rnd(2) === 1;
      if (i % 3 === 0) {
        lines.push(JSON.stringify({ kind: 'decode', variant: v.name, ids, skip, text: await tok.decode(ids, skip) }));
      }
    }
    if (base) {
      // Random id sequences, rich in byte tokens (partial UTF-8) and added tokens.
      const size = tok.getVocabSize(true);
      const qwen = v.name === 'qwen3';
      for (let i = 0; i < 120; i++) {
        const n = 1 + rnd(20);
        const ids = [];
        for (let k = 0; k < n; k++) {
          const mode = rnd(4);
          if (!qwen) ids.push(mode === 0 ? 3 + rnd(256) : rnd(size));
          else ids.push(mode === 0 ? rnd(256) : mode === 1 ? 151643 + rnd(26) : rnd(size));
        }
        const skip = rnd(2) === 1;
        lines.push(JSON.stringify({ kind: 'decode', variant: v.name, ids, skip, text: await tok.decode(ids, skip) }));
      }
    }
  }
  process.stdout.write(lines.join('\n') + '\n');
})();
