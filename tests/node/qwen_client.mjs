// Test driver: runs Qwen Code's real IDE client (class IdeClient, bundled in
// one of the package's chunks) and exposes it over a JSON-lines protocol.
//
//   stdin:  {"id": N, "cmd": "connect" | "status" | "context" | "tools" |
//            "openDiff" | "closeDiff" | "resolveDiffFromCli" | "disconnect" | "exit", ...args}
//   stdout: {"id": N, "ok": true, "result": ...} | {"id": N, "ok": false, "error": "..."}
//           {"event": "context", "value": ...} | {"event": "status", "status": ..., "details": ...}
//
// Env: QWEN_PKG_DIR = the @qwen-code/qwen-code package directory
// (default: <this dir>/node_modules/@qwen-code/qwen-code). Use Node >= 22, as the
// package requires (the IdeClient chunk also happened to load on Node 20.20).
// The client reads QWEN_HOME / HOME, QWEN_CODE_IDE_SERVER_PORT,
// QWEN_CODE_IDE_WORKSPACE_PATH and process.cwd() like the real CLI does.
// Qwen picks the lock file and the IDE once, at the first IdeClient.getInstance()
// (here: the first command other than "context"/"exit"), so write the lock file
// before sending it; later connects re-read the file but never re-detect the IDE.

import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

// stdout carries the protocol only; route any console output to stderr.
for (const name of ["log", "info", "debug", "warn", "trace"]) {
  console[name] = (...args) => console.error(...args);
}

// IdeClient.openDiff does `promise.finally(release)` and drops the result, so
// every failed openDiff also leaves an unhandled rejection. The real CLI
// survives it (its handler logs "CRITICAL: Unhandled Promise Rejection!");
// do the same so the driver does not crash.
process.on("unhandledRejection", (reason) => {
  console.error("qwen_client: unhandled rejection:", reason?.message ?? reason);
});

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// The chunk's file name is a content hash that changes with every release, so
// find the chunk that defines IdeClient instead of hard-coding it.
function findIdeChunk(pkgDir) {
  const dir = path.join(pkgDir, "chunks");
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith(".js")) continue;
    const file = path.join(dir, name);
    if (fs.readFileSync(file, "utf8").includes("var IdeClient = class")) return file;
  }
  throw new Error(`no chunk defining IdeClient under ${dir}`);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(
  process.env.QWEN_PKG_DIR || path.join(here, "node_modules", "@qwen-code", "qwen-code"),
);
const { IdeClient, ideContextStore } = await import(pathToFileURL(findIdeChunk(pkgDir)).href);
if (typeof IdeClient?.getInstance !== "function") {
  throw new Error("the IDE chunk does not export IdeClient");
}

// The store notifies on every clear(), even when already empty; report changes only.
let contextIsNull = true;
ideContextStore?.subscribe((value) => {
  if (value == null && contextIsNull) return;
  contextIsNull = value == null;
  send({ event: "context", value: value ?? null });
});

let clientPromise = null;
function getClient() {
  if (!clientPromise) {
    clientPromise = IdeClient.getInstance().then((client) => {
      client.addStatusChangeListener((state) =>
        send({ event: "status", status: state.status, details: state.details ?? null }),
      );
      return client;
    });
  }
  return clientPromise;
}

function describe(client) {
  const state = client.getConnectionStatus();
  return {
    status: state.status,
    details: state.details ?? null,
    ide: client.getDetectedIdeDisplayName() ?? null,
    diffing: client.isDiffingEnabled(),
  };
}

function need(msg, key, type) {
  if (typeof msg[key] !== type) throw new Error(`${msg.cmd}: "${key}" must be a ${type}`);
  return msg[key];
}

// Runs one command; returns its result. openDiff returns at once and replies
// later by itself, so the commands after it keep being processed.
async function handle(msg) {
  switch (msg.cmd) {
    case "connect": {
      const client = await getClient();
      await client.connect();
      return describe(client);
    }
    case "status":
      return describe(await getClient());
    case "context":
      return ideContextStore?.get() ?? null;
    case "tools":
      return [...(await getClient()).availableTools];
    case "openDiff": {
      const client = await getClient();
      const filePath = need(msg, "filePath", "string");
      const newContent = need(msg, "newContent", "string");
      client.openDiff(filePath, newContent).then(
        (r) => send({ id: msg.id, ok: true, result: { status: r.status, content: r.content ?? null } }),
        (err) => send({ id: msg.id, ok: false, error: String(err?.message ?? err) }),
      );
      return NO_REPLY;
    }
    case "closeDiff": {
      const client = await getClient();
      const filePath = need(msg, "filePath", "string");
      const content = await client.closeDiff(filePath, {
        suppressNotification: msg.suppressNotification,
      });
      return { content: content ?? null };
    }
    case "resolveDiffFromCli": {
      // What the CLI does when the user answers in the terminal: closeDiff with
      // suppressNotification, then settle the pending openDiff itself.
      const client = await getClient();
      const filePath = need(msg, "filePath", "string");
      await client.resolveDiffFromCli(filePath, need(msg, "outcome", "string"));
      return null;
    }
    case "disconnect": {
      const client = await getClient();
      await client.disconnect();
      return describe(client);
    }
    case "exit":
      send({ id: msg.id, ok: true, result: null });
      process.stdout.write("", () => process.exit(0));
      return NO_REPLY;
    default:
      throw new Error(`unknown command: ${JSON.stringify(msg.cmd)}`);
  }
}
const NO_REPLY = Symbol("no reply");

// Commands run one after another, in the order received.
let queue = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    send({ id: null, ok: false, error: `bad JSON: ${err.message}` });
    return;
  }
  queue = queue.then(async () => {
    try {
      const result = await handle(msg);
      if (result !== NO_REPLY) send({ id: msg.id, ok: true, result });
    } catch (err) {
      send({ id: msg.id, ok: false, error: String(err?.message ?? err) });
    }
  });
});
rl.on("close", () => queue.then(() => process.exit(0)));
