// The guide's deadlock in the tuple scope (docs/dashboard.md): against a run
// of examples/linda/deadlock.lua with --dashboard, the space "locks" shows
// no lock left and two waiters, each for the lock the other holds.
// Usage: node deadlock.mjs URL [SHOTS_DIR]
import { launch } from "./launch.mjs";

const [url, shots] = process.argv.slice(2);
const { browser, done } = await launch(90);
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 640 } });
  await page.goto(url);
  await page.click('button[data-view="scope"]');
  const locks = '.space[data-space="locks"]';
  await page.waitForSelector(`${locks} .waiter >> text=waits (take) for ("lock", "b")`, { timeout: 15000 });
  await page.waitForSelector(`${locks} .waiter >> text=waits (take) for ("lock", "a")`, { timeout: 15000 });
  const classes = await page.locator(`${locks} tr.class`).allTextContents();
  if (classes.some((c) => c.includes('("lock"'))) throw new Error("a lock is still in the space: " + classes.join("; "));
  if (shots) await page.screenshot({ path: `${shots}/deadlock.png` });
  console.log("ok: the deadlock shows in the tuple scope");
} catch (e) {
  console.log("FAILED: " + e.message.split("\n")[0]);
  process.exitCode = 1;
} finally {
  await done();
}
