// Drives the dashboard in headless Chromium (Debian's, through
// playwright-core): every view and action, against a `--nodes 3` run of
// tests/browser/demo.lua. Usage: node dashboard.mjs URL COOKIE_FILE [SHOTS_DIR]
// Prints one line per check; exits 1 naming the check that failed.
import { launch } from "./launch.mjs";
import { readFileSync } from "node:fs";

const [url, cookieFile, shots] = process.argv.slice(2);
const cookie = readFileSync(cookieFile, "utf8").trim();
const LIMIT = 15000;

const { browser, done } = await launch(150);
let step = "start";
const check = (name) => { step = name; };
const ok = () => console.log("ok: " + step);
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const external = [];
  page.on("request", (r) => { if (!r.url().startsWith(url)) external.push(r.url()); });
  const shot = async (name) => { if (shots) await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true }); };
  const spaces = () => page.evaluate(async () => (await (await fetch("/api/spaces")).json()));
  const ticks = async () => {
    const jobs = (await spaces()).find((sp) => sp.name === "jobs");
    return jobs ? jobs.outs : -1;
  };

  check("the page shows the three nodes");
  await page.goto(url);
  await page.waitForFunction(() => document.querySelectorAll("#nodes tbody tr").length === 3, null, { timeout: LIMIT });
  await page.waitForFunction(() => [...document.querySelectorAll("#nodes tbody tr td:nth-child(2)")].every((td) => td.textContent === "up"), null, { timeout: LIMIT });
  await page.waitForFunction(() => document.querySelector("#nodes tbody tr td:nth-child(7)").textContent !== "", null, { timeout: LIMIT });
  await shot("nodes");
  ok();

  check("the processes view shows the registered process");
  await page.click('button[data-view="processes"]');
  await page.waitForSelector('#processes tbody tr:has(td.names:text-is("worker"))', { timeout: LIMIT });
  await page.waitForSelector('#processes tbody tr:has(td.names:text-is("worker")) td.fn:has-text("demo.lua:")', { timeout: LIMIT });
  await page.click('#processes tbody tr:has(td.names:text-is("worker")) button.inspect');
  await page.waitForFunction(() => /take|linda|waiting/.test(document.querySelector("#stack").textContent), null, { timeout: LIMIT });
  await shot("processes");
  ok();

  check("the tuple scope shows the space, its classes and the waiting take with its template");
  await page.click('button[data-view="scope"]');
  const jobs = '.space[data-space="jobs"]';
  await page.waitForSelector(`${jobs} >> text=("tick", …) arity 2`, { timeout: LIMIT });
  await page.waitForSelector(`${jobs} .waiter >> text=waits (take) for ("answer", ?int)`, { timeout: LIMIT });
  await page.click(`${jobs} tr.class:has-text('("job", …)') button`);
  await page.waitForFunction(() => document.querySelector("#dump").textContent.includes('("job", 1)'), null, { timeout: LIMIT });
  await shot("scope");
  ok();

  check("an action without a session is refused");
  const refused = await page.evaluate(async () => (await fetch("/api/scope/stop", { method: "POST" })).status);
  if (refused !== 401) throw new Error(`stop without a session answered ${refused}`);
  ok();

  check("logging in with the cookie");
  await page.fill("#cookie-input", "not the cookie");
  await page.click("#btn-login");
  await page.waitForFunction(() => document.querySelector("#error").textContent.includes("wrong"), null, { timeout: LIMIT });
  await page.fill("#cookie-input", cookie);
  await page.click("#btn-login");
  await page.waitForSelector("#session:not([hidden])", { timeout: LIMIT });
  if ((await page.content()).includes(cookie)) throw new Error("the cookie is in the page");
  ok();

  check("stop holds the ticker's next out");
  await page.click("#btn-stop");
  await page.waitForFunction(() => document.querySelector("#scope-state").textContent === "stopped", null, { timeout: LIMIT });
  await page.waitForSelector('#held li >> text=out ("tick"', { timeout: LIMIT });
  const stopped = await ticks();
  await page.waitForTimeout(300); // nothing is to happen: a window to see that
  if ((await ticks()) !== stopped) throw new Error("ticks went on while stopped");
  await shot("stopped");
  ok();

  check("step lets exactly one operation through");
  await page.click("#btn-step");
  await page.waitForFunction(async (n) => (await (await fetch("/api/spaces")).json()).find((s) => s.name === "jobs").outs === n + 1, stopped, { timeout: LIMIT });
  await page.waitForSelector('#held li >> text=out ("tick"', { timeout: LIMIT });
  await page.waitForTimeout(200);
  if ((await ticks()) !== stopped + 1) throw new Error("step let more than one operation through");
  ok();

  check("continue lets the ticker go on");
  await page.click("#btn-continue");
  await page.waitForFunction(() => document.querySelector("#scope-state").textContent === "running", null, { timeout: LIMIT });
  await page.waitForFunction(async (n) => (await (await fetch("/api/spaces")).json()).find((s) => s.name === "jobs").outs >= n + 5, stopped, { timeout: LIMIT });
  ok();

  check("a break condition typed in the page stops the program where it holds");
  await page.fill("#break-input", "op == 'out' and t[1] == 'tick' and t[2] % 10 == 0");
  await page.click("#btn-break");
  await page.waitForSelector("#hit:not([hidden])", { timeout: LIMIT });
  const hit = await page.textContent("#hit");
  const n = Number((hit.match(/\("tick", (\d+)\)/) || [])[1]);
  if (!(n > 0 && n % 10 === 0)) throw new Error(`break on ${hit}`);
  // The other nodes stop too, within a refresh.
  await page.waitForFunction(async () => (await (await fetch("/api/scope")).json()).nodes.every((n) => n.stopped), null, { timeout: LIMIT });
  await shot("break");
  await page.fill("#break-input", "");
  await page.click("#btn-break");
  await page.click("#btn-continue");
  await page.waitForFunction(() => document.querySelector("#scope-state").textContent === "running", null, { timeout: LIMIT });
  ok();

  check("the skeleton run shows its progress and each node's tasks in flight and limit");
  await page.click('button[data-view="pools"]');
  await page.waitForFunction(() => /run \d+: \d+\/2000 tasks done/.test(document.querySelector("#skeletons tbody").textContent), null, { timeout: LIMIT });
  const runText = await page.textContent("#skeletons tbody");
  if ((runText.match(/in flight \(limit \d+\)/g) || []).length !== 3) throw new Error("not three nodes in the run: " + runText);
  if (!/latest: apply of task \d+ on/.test(runText)) throw new Error("no task stream: " + runText);
  await page.waitForFunction(() => document.querySelectorAll("#pools tbody tr").length === 3, null, { timeout: LIMIT });
  await shot("skeletons");
  ok();

  check("the entities view shows the entity and its frame rate");
  await page.click('button[data-view="entities"]');
  await page.waitForFunction(() => {
    const row = [...document.querySelectorAll("#entities tbody tr")].find((r) => r.cells[0].textContent === "clock");
    const rate = row && Number(row.querySelector(".rate").textContent);
    return rate > 5 && rate < 40;
  }, null, { timeout: LIMIT });
  await shot("entities");
  ok();

  check("the page loaded nothing from elsewhere");
  if (external.length) throw new Error("requests elsewhere: " + external.join(", "));
  ok();
  check("kill from the page ends the registered process");
  await page.click('button[data-view="processes"]');
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/api/kill"), { timeout: LIMIT }),
    page.click('#processes tbody tr:has(td.names:text-is("worker")) button.kill'),
  ]);
  if (answer.status() !== 200) throw new Error(`kill answered ${answer.status()}`);
  ok(); // the program's monitor sees it end, and the program ends: the test reads its output

} catch (e) {
  console.log(`FAILED: ${step}: ${e.message.split("\n")[0]}`);
  process.exitCode = 1;
} finally {
  await done();
}
