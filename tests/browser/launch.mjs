// The browser for the dashboard's tests: Debian's Chromium, headless,
// with a watchdog that ends the script (closing the browser) after
// `seconds`, before the Rust side's limit, so that a hang leaves no
// Chromium behind (a killed node would). `done()` closes it and calls the
// watchdog off.
import { chromium } from "playwright-core";

export async function launch(seconds) {
  let browser;
  const watchdog = setTimeout(async () => {
    console.log(`FAILED: no end within ${seconds} s`);
    if (browser) await browser.close().catch(() => {});
    process.exit(1);
  }, seconds * 1000);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const done = async () => {
    clearTimeout(watchdog);
    await browser.close();
  };
  return { browser, done };
}
