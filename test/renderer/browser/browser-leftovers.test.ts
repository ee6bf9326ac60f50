/**
 * What a compromised browser leaves in the browser container (docs/security.md "The browser
 * container"): each Chromium has HOME and TMPDIR of its own beside its profile, all removed with
 * it; fontconfig reads the system's configuration and no user file, so a fonts.conf planted
 * wherever that browser could write changes no later render's text; and each browser is served by
 * a process of its own that ends with it, so nothing of its bridge outlives it. Through the
 * launcher as the image runs it, and real Chromium.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import t from 'tap';
import { findChromium } from '../../../renderer/browser/launcher/executable.ts';
import { systemOnlyFontsConfig } from '../../../renderer/browser/launcher/fontconfig.ts';
import { parseStat } from '../../../renderer/browser/launcher/proc.ts';
import { browserSwitches } from '../../../renderer/browser/pod-isolation.ts';
import { connectSocketBrowser, launcherReport, maxFrameBytes } from '../../../renderer/browser/socket-transport.ts';
import { alive, runLauncher, tempDir, until } from './helpers.ts';


/** A rule that turns every family into a monospace one: text measured in sans-serif widens. */
const HOSTILE_FONTS_CONF = `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <match target="pattern">
    <edit name="family" mode="assign" binding="strong"><string>DejaVu Sans Mono</string></edit>
  </match>
</fontconfig>
`;

/** The width, in CSS px, of a run of narrow letters in sans-serif: a monospace font makes it far wider. */
async function textWidth(browser: Browser): Promise<number> {
  const context = await browser.createBrowserContext();
  try {
    const page = await context.newPage();
    await page.setContent('<span id="t" style="font-family: sans-serif; font-size: 40px">iiiiiiiiiiiiiiii</span>');
    return (await page.$eval('#t', (e) => e.getBoundingClientRect().width)) as number;
  } finally {
    await context.close().catch(() => {});
  }
}

function environOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) out[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return out;
}

function argOf(pid: number, name: string): string | undefined {
  const arg = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').find((a) => a.startsWith(`--${name}=`));
  return arg?.slice(name.length + 3);
}

function parentOf(pid: number): number {
  return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8')).ppid;
}

/** Writes the hostile fonts.conf everywhere fontconfig looks for a user's, under `home`. */
function plant(home: string): void {
  for (const file of [path.join(home, '.config/fontconfig/fonts.conf'), path.join(home, '.fonts.conf')]) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, HOSTILE_FONTS_CONF);
  }
}

t.test('a fonts.conf planted wherever a browser could write changes no later render; each browser its own HOME, TMPDIR and process', async (t) => {
  const dir = tempDir(t, 'tintype-leftovers-');
  const socketPath = path.join(dir, 'cdp.sock');
  // HOME as the browser image sets it: the container's /tmp, shared by every browser.
  const { child: launcher } = await runLauncher(t, { TMPDIR: dir, HOME: dir, TINTYPE_BROWSER_SOCKET: socketPath });
  t.equal(launcher.exitCode, null, 'the launcher listens');
  const open = async () => (await connectSocketBrowser(socketPath, browserSwitches('127.0.0.1:9'), maxFrameBytes(26_214_400))).browser;

  const first = await open();
  const firstPid = launcherReport(first)!.pid;
  const before = await textWidth(first);
  const env = environOf(firstPid);
  const profile = argOf(firstPid, 'user-data-dir')!;
  const own = path.dirname(profile);
  t.ok(own.startsWith(`${dir}/`) && own !== dir, `its profile is in a directory of its own (${own})`);
  t.ok(env['HOME']!.startsWith(`${own}/`), 'HOME is inside it');
  t.ok(env['TMPDIR']!.startsWith(`${own}/`), 'TMPDIR is inside it');
  const firstServer = parentOf(firstPid);
  t.not(firstServer, launcher.pid, 'served by a process other than the launcher');

  // As the compromised browser could: in its own HOME, in the container's /tmp (every browser's
  // HOME before), and in every other browser's directory it can find there.
  plant(env['HOME']!);
  plant(dir);
  for (const name of readdirSync(dir)) if (name.startsWith('tintype-browser-')) plant(path.join(dir, name, 'home'));

  const second = await open();
  const secondPid = launcherReport(second)!.pid;
  for (const name of readdirSync(dir)) if (name.startsWith('tintype-browser-')) plant(path.join(dir, name, 'home'));
  await first.close();
  await until(() => !alive(firstPid) && !existsSync(own));
  t.pass("the first browser's directory (profile, HOME, TMPDIR) went with it");
  await until(() => !alive(firstServer));
  t.pass('and so did the process that served it');

  const after = await textWidth(second);
  t.equal(after, before, `the text of a later render is unchanged (${before} px)`);
  t.not(parentOf(secondPid), firstServer, 'the next browser is served by a fresh process');
  t.ok(alive(launcher.pid!), 'the launcher serves on');
  const fontconfig = environOf(secondPid)['FONTCONFIG_FILE'];
  await second.close();

  // A session process killed outright (the kernel's OOM killer): its Chromium and directory still go.
  const third = await open();
  const thirdPid = launcherReport(third)!.pid;
  const thirdDir = path.dirname(argOf(thirdPid, 'user-data-dir')!);
  process.kill(parentOf(thirdPid), 'SIGKILL');
  await until(() => !alive(thirdPid) && !existsSync(thirdDir));
  t.pass('a killed session process leaves no Chromium and no directory behind');
  await third.close().catch(() => {});

  // A browser's own HOME is writable by every browser (one uid): fontconfig must read nothing there.
  const chromium = (env: Record<string, string>) =>
    puppeteer.launch({ executablePath: findChromium(undefined), headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [], env });
  t.type(fontconfig, 'string', "Chromium is given the launcher's fontconfig file");
  const walled = await chromium({ PATH: '/usr/bin:/bin', HOME: dir, FONTCONFIG_FILE: fontconfig! });
  try {
    t.equal(await textWidth(walled), before, 'with it, a planted file in HOME changes nothing');
  } finally {
    await walled.close();
  }
  // Where fontconfig reads user files, the planted file does change the text: the wall is what holds it.
  const control = await chromium({ PATH: '/usr/bin:/bin', HOME: dir });
  try {
    t.not(await textWidth(control), before, 'without it, a Chromium reading the planted file renders the text otherwise');
  } finally {
    await control.close();
  }
});

t.test("the fontconfig file keeps the system's directories and rules and drops every user location, however deeply included", async (t) => {
  const etc = tempDir(t, 'tintype-fonts-etc-');
  mkdirSync(path.join(etc, 'conf.d'));
  const files: Record<string, string> = {
    'fonts.conf': `<fontconfig><dir>/usr/share/fonts</dir><dir prefix="xdg">fonts</dir><dir>~/.fonts</dir>
<match target="pattern"><test name="family"><string>mono</string></test><edit name="family"><string>monospace</string></edit></match>
<include ignore_missing="yes">conf.d</include><cachedir>/var/cache/fontconfig</cachedir><cachedir prefix="xdg">fontconfig</cachedir><cachedir>~/.fontconfig</cachedir></fontconfig>`,
    'conf.d/10-system.conf': '<fontconfig><match target="font"><edit name="antialias"><bool>true</bool></edit></match></fontconfig>',
    'conf.d/50-user.conf': '<fontconfig><include ignore_missing="yes" prefix="xdg">fontconfig/fonts.conf</include><include ignore_missing="yes">~/.fonts.conf</include></fontconfig>',
    'conf.d/51-local.conf': '<fontconfig><include ignore_missing="yes">local.conf</include></fontconfig>',
    'conf.d/README': '<fontconfig><include>~/.anything</include></fontconfig>',
    'local.conf': '<fontconfig><include ignore_missing="yes">~/.config/more.conf</include></fontconfig>',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(etc, name), text);
  const conf = systemOnlyFontsConfig(etc);
  t.match(conf, '<dir>/usr/share/fonts</dir>', "the system's font directory");
  t.match(conf, '<cachedir>/var/cache/fontconfig</cachedir>', "the system's cache");
  t.match(conf, '<string>monospace</string>', "the system's own rules");
  t.match(conf, `<include ignore_missing="yes">${path.join(etc, 'conf.d/10-system.conf')}</include>`, 'a system conf.d file, by its full path');
  t.notMatch(conf, /xdg|~|50-user|51-local|README|>conf\.d</, 'no user location, no file that names one (directly or through local.conf), nothing conf.d would not read');
});
