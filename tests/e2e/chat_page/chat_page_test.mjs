// Drives Tessera's built-in chat page (GET /) in Debian's headless Chromium
// through puppeteer-core (pinned in /package.json): loads the page, checks
// the model list, sends a message and reads the streamed answer from the
// page, stops a long answer with the Stop button, and keeps a screenshot.
//
// Usage: TESSERA_BASE_URL=http://127.0.0.1:PORT CHROMIUM=/usr/bin/chromium
//          SCREENSHOT=/path/chat_page.png node chat_page_test.mjs
// Prints "ok <name>" / "FAIL <name>: <why>"; the exit code is the number of
// failures, 2 for a bad environment.
import assert from "node:assert/strict";

import puppeteer from "puppeteer-core";

const base_url = process.env.TESSERA_BASE_URL;
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const screenshot = process.env.SCREENSHOT || "chat_page.png";
if (!base_url) {
  console.error("set TESSERA_BASE_URL to the server under test");
  process.exit(2);
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  // CI runs as root, where Chromium's sandbox cannot start.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const failures = [];
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures.push(name);
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  }
}

const page = await browser.newPage();
const console_errors = [];
page.on("pageerror", (e) => console_errors.push(String(e)));
await page.setViewport({width: 1100, height: 700});

await check("page loads and lists the served model", async () => {
  const res = await page.goto(base_url + "/", {waitUntil: "networkidle0"});
  assert.equal(res.status(), 200);
  assert.match(res.headers()["content-type"], /text\/html/);
  await page.waitForFunction(
      () => document.querySelectorAll("#model option").length > 0,
      {timeout: 10000});
  const model = await page.$eval("#model", (s) => s.value);
  assert.equal(model, "tessera-demo");
});

await check("a message streams an answer into the page", async () => {
  await page.$eval("#temperature", (e) => { e.value = "0"; });
  await page.$eval("#max_tokens", (e) => { e.value = "24"; });
  await page.type("#input", "Hello there");
  await page.click("#send");
  await page.waitForSelector(".assistant[data-state='done']", {timeout: 60000});
  const answer = await page.$eval(".assistant", (e) => e.textContent);
  assert.ok(answer.length > 0, "empty answer");
  const user = await page.$eval(".user", (e) => e.textContent);
  assert.equal(user, "Hello there");
  const finish = await page.$eval(".assistant", (e) => e.dataset.finish);
  assert.ok(finish === "length" || finish === "stop", finish);
  const status = await page.$eval("#status", (e) => e.textContent);
  assert.match(status, /tokens\/s/);
  assert.match(status, /^24 tokens|^\d+ tokens/);
  // The page's answer is the API's answer (greedy, same request).
  const api = await page.evaluate(async () => {
    const r = await fetch("/v1/chat/completions", {method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({messages: [{role: "user", content: "Hello there"}],
                            temperature: 0, top_p: 1, max_tokens: 24})});
    return (await r.json()).choices[0].message.content;
  });
  assert.equal(answer, api);
  await page.screenshot({path: screenshot});
});

await check("Stop ends a long answer and the page keeps working", async () => {
  // The demo model has random weights: at temperature 1 it samples EOS
  // within a few hundred tokens, often before the click lands (the answer
  // then ends "done"). The test adds ignore_eos to the page's request so
  // the answer runs until Stop.
  await page.setRequestInterception(true);
  const add_ignore_eos = (request) => {
    if (request.method() === "POST" &&
        request.url().endsWith("/v1/chat/completions")) {
      const body = JSON.parse(request.postData());
      body.ignore_eos = true;
      request.continue({postData: JSON.stringify(body)});
    } else {
      request.continue();
    }
  };
  page.on("request", add_ignore_eos);
  await page.$eval("#max_tokens", (e) => { e.value = "1900"; });
  await page.$eval("#temperature", (e) => { e.value = "1"; });
  await page.type("#input", "Tell me a very long story");
  // Stop as soon as the answer starts streaming (the demo model is fast).
  await page.evaluate(() => {
    const log = document.getElementById("log");
    new MutationObserver((changes, observer) => {
      const all = document.querySelectorAll(".assistant");
      if (all.length === 2 && all[1].textContent.length > 0) {
        observer.disconnect();
        document.getElementById("stop").click();
      }
    }).observe(log, {childList: true, subtree: true, characterData: true});
  });
  await page.click("#send");
  await page.waitForFunction(() => {
    const all = document.querySelectorAll(".assistant");
    return all.length === 2 && all[1].dataset.state !== "streaming";
  }, {timeout: 60000});
  const state = await page.$$eval(".assistant", (all) => all[1].dataset.state);
  assert.equal(state, "stopped");
  const text = await page.$$eval(".assistant", (all) => all[1].textContent);
  assert.ok(text.length > 0 && text.length < 1900 * 4, `${text.length} chars`);
  const send_enabled = await page.$eval("#send", (b) => !b.disabled);
  assert.ok(send_enabled, "Send stays disabled after Stop");
  const status = await page.$eval("#status", (e) => e.textContent);
  assert.match(status, /stopped/);
  page.off("request", add_ignore_eos);
  await page.setRequestInterception(false);
});

await check("no script errors on the page", async () => {
  assert.deepEqual(console_errors, []);
});

await browser.close();
process.exit(Math.min(failures.length, 100));
