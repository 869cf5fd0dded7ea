// The planner page of `meshplan serve` in headless Chromium (playwright-core): plans
// Llama-3.1-70B on 32 H100 GPUs, checks the table (ties, oom% and band columns) against the API's JSON, the charts, the
// URL state and a recipe download; pastes a bad recipe and a broken config.json and sees their
// errors. Env: URL (the server), CHROMIUM (its binary), OUT (where the screenshot goes).
"use strict";
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const base = process.env.URL;

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
  const page = await browser.newPage({ acceptDownloads: true, viewport: { width: 1280, height: 1500 } });
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e));
  page.on("request", (r) => { if (!r.url().startsWith(base)) problems.push("fetched from outside: " + r.url()); });
  await page.goto(base);
  await page.waitForFunction(() => document.querySelector("#model").options.length > 10);
  await page.selectOption("#model", "llama3.1-70b");
  await page.selectOption("#system", "dgx-h100");
  await page.fill("#gpus", "32");
  await page.fill("#seq_len", "8192");
  await page.fill("#global_batch", "512");
  await page.selectOption("#framework", "automodel");
  await page.click("#plan");
  await page.waitForSelector("#table tbody tr");

  // The table is the API's plan for the same request.
  const api = await page.evaluate(async () => {
    const r = await fetch("/api/plan", { method: "POST", body: JSON.stringify({ model: "llama3.1-70b",
      system: "dgx-h100", gpus: 32, seq_len: 8192, global_batch: 512, top: 10 }) });
    return r.json();
  });
  const rows = await page.$$eval("#table tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.strictEqual(rows.length, api.recipes.length);
  assert.strictEqual(rows.length, 10);
  // Columns: # strategy tp pp cp ep dp micro-batch recompute GiB/GPU oom% step_s band tok/s/GPU TFLOP/s
  // MFU% (against the BF16 dense peak; a BF16 plan has no column against another peak).
  const head = await page.$$eval("#table thead th", (ths) => ths.map((th) => th.textContent));
  assert.strictEqual(head[10], "oom %");
  assert.strictEqual(head[12], "band");
  assert.strictEqual(head[14], "TFLOP/s");
  assert.strictEqual(head[15], "MFU %");
  assert.strictEqual(head.length, 16);
  let ties = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = api.recipes[i], l = r.layout;
    ties += r.risk.tie ? 1 : 0;
    assert.deepStrictEqual(rows[i].slice(0, 8), [String(r.rank) + (r.risk.tie ? "=" : ""), l.strategy, String(l.tp_size),
      String(l.pp_size), String(l.cp_size), String(l.ep_size), String(l.dp_size), String(l.micro_batch)]);
    assert.strictEqual(rows[i][10], (100 * r.risk.oom_probability).toFixed(1));
    assert.strictEqual(rows[i][12], "\u00b1" + (100 * r.risk.step_band).toFixed(0) + "%");
    assert.strictEqual(rows[i][13], r.tokens_per_s_per_gpu.toFixed(0));
    assert.strictEqual(rows[i][14], r.model_tflops_per_gpu.toFixed(0));
    // H100's dense BF16 peak is 989 TFLOP/s (hwdb gpus/h100-sxm.yaml): MFU = TFLOP/s / 989.
    assert.ok(Math.abs(r.mfu - r.model_tflops_per_gpu / 989) < 1e-9, "mfu " + r.mfu);
    assert.strictEqual(rows[i][15], (100 * r.mfu).toFixed(1));
    assert.strictEqual(l.tp_size * l.pp_size * l.cp_size * l.dp_size, 32);
  }
  // As the CLI prints this job (README): the first layouts tied within an 8% band, none at risk.
  assert.strictEqual(rows[0][0], "1=");
  assert.strictEqual(rows[0][12], "\u00b18%");
  assert.strictEqual(rows[0][10], "0.0");
  assert.ok(ties >= 2, "ties: " + ties);
  assert.ok((await page.textContent("#ties")).startsWith("=: tied, expected step within \u00b18% of the best ("));
  // The charts: a memory bar of 6 segments, a step-time bar of 9, a scatter of the fitting layouts.
  assert.strictEqual(await page.$$eval("#membar-svg rect", (r) => r.length), 6);
  assert.strictEqual(await page.$$eval("#timebar-svg rect", (r) => r.length), 9);
  const dots = await page.$$eval("#scatter-svg circle", (c) => c.length);
  assert.ok(dots >= 10, "scatter has " + dots + " points");
  // The GPU-count sweep: 8 ... 128 GPUs, a line through the points that have a layout (8 GPUs
  // has none: Llama-3.1-70B does not fit one node at this batch), the same best as the API's.
  await page.click("#sweep-gpus");
  await page.waitForSelector("#sweep-svg");
  const swept = await page.evaluate(async () => {
    const r = await fetch("/api/plan", { method: "POST", body: JSON.stringify({ model: "llama3.1-70b",
      system: "dgx-h100", seq_len: 8192, global_batch: 512, framework: "automodel", precision: "bf16",
      sweep_gpus: [8, 16, 32, 64, 128] }) });
    return r.json();
  });
  const withLayout = swept.sweep.filter((p) => p.best).length;
  assert.strictEqual(await page.$$eval("#sweep-svg circle.sw", (c) => c.length), withLayout);
  assert.strictEqual(await page.$$eval("#sweep-svg text.none", (c) => c.length), 5 - withLayout);
  assert.ok(withLayout >= 3, JSON.stringify(swept.sweep.map((p) => p.why)));
  fs.mkdirSync(process.env.OUT, { recursive: true });
  await page.screenshot({ path: path.join(process.env.OUT, "serve-page.png"), fullPage: true });

  // Select rank 2 (click its row): the URL says so, the recipe shown is rank 2's.
  await page.click("#table tbody tr[data-i='1']");
  const url = new URL(page.url());
  assert.strictEqual(url.searchParams.get("sel"), "2");
  assert.strictEqual(url.searchParams.get("gpus"), "32");
  assert.strictEqual(url.searchParams.get("model"), "llama3.1-70b");
  const yaml = await page.textContent("#yaml");
  assert.ok(yaml.includes("# meshplan recipe 2:"), yaml.slice(0, 200));
  assert.ok(yaml.includes("cp_size: " + api.recipes[1].layout.cp_size));
  // Hover a scatter point: its layout in the tooltip.
  await page.hover("#scatter-svg circle[data-i='0']", { force: true });  // points may overlap
  assert.ok((await page.textContent("#tip")).includes("tok/s/GPU"));

  // Download the recipe: the file is the YAML shown.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  assert.strictEqual(download.suggestedFilename(), "llama3.1-70b_dgx-h100_32.rank2.yaml");
  assert.strictEqual(fs.readFileSync(await download.path(), "utf8"), yaml);

  // Its launch script (torchrun) starts that recipe file, found beside it.
  const launch = await page.textContent("#launch");
  assert.ok(launch.includes("torchrun") && launch.includes("llama3.1-70b_dgx-h100_32.rank2.yaml"), launch.slice(0, 300));
  const [script] = await Promise.all([page.waitForEvent("download"), page.click("#download-launch")]);
  assert.strictEqual(script.suggestedFilename(), "llama3.1-70b_dgx-h100_32.rank2.launch.sh");
  assert.strictEqual(fs.readFileSync(await script.path(), "utf8"), launch);

  // The shared link opens the same plan with rank 2 selected.
  const shared = await browser.newPage();
  await shared.goto(page.url());
  await shared.waitForSelector("#table tbody tr.sel");
  assert.strictEqual(await shared.getAttribute("#table tbody tr.sel", "data-i"), "1");
  await shared.close();

  // A recipe that is not YAML: the reader's error, naming the pasted recipe and its line.
  await page.fill("#recipe", "distributed:\n  tp_size: [1\n");
  await page.click("#check");
  await page.waitForSelector("#verdict .err");
  const err = await page.textContent("#verdict .err");
  assert.ok(/recipe\.yaml:\d+/.test(err), err);
  // A recipe that breaks a rule (tp 3 does not divide 64 heads): INVALID, the rule, nearest fixes.
  await page.fill("#recipe", "distributed:\n  strategy: fsdp2\n  tp_size: 3\n  pp_size: 1\n  cp_size: 1\n  dp_size: 8\n" +
                  "step_scheduler:\n  global_batch_size: 512\n  local_batch_size: 1\ndataset:\n  seq_len: 8192\n");
  await page.fill("#gpus", "24");
  await page.click("#check");
  await page.waitForSelector("#verdict li.rule");
  assert.ok((await page.textContent("#verdict")).includes("INVALID"));
  assert.ok((await page.$$("#verdict ol.nearest li")).length >= 1);

  // A config.json that does not parse: the error on the page, file and line named.
  await page.fill("#model_config", "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": \"big\"\n}\n");
  await page.fill("#gpus", "32");
  await page.click("#plan");
  await page.waitForSelector("#error:not([hidden])");
  const perr = await page.textContent("#error");
  assert.ok(perr.startsWith("model_config.json:3"), perr);
  // ... and the server still answers: back to the preset.
  await page.check("#msrc-preset");
  await page.click("#plan");
  await page.waitForSelector("#table tbody tr");
  assert.ok(await page.isHidden("#error"));

  assert.deepStrictEqual(problems, []);
  await browser.close();
  console.log("browser.page: ok (" + rows.length + " rows, " + dots + " scatter points)");
})().catch((e) => { console.error(e); process.exit(1); });
