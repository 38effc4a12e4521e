// Drives the real Gemini CLI IDE client (@google/gemini-cli-core) for the tests.
// Protocol: one JSON command per stdin line {id, cmd, ...}; one JSON reply per stdout
// line {id, ok, result|error}; unsolicited {event: "context"|"status", ...} lines.
// Commands: connect, status, context, tools, openDiff, closeDiff, resolveDiffFromCli, callTool,
// disconnect, exit. After connect, every ide/diff* notification is also reported as
// {event: "notification", method, params}, so tests can count them.
import readline from 'node:readline';

const core = process.env.GEMINI_CORE_DIR ?? new URL('./node_modules/@google/gemini-cli-core/', import.meta.url).pathname;
const { IdeClient } = await import(`${core}/dist/src/ide/ide-client.js`);
const { ideContextStore } = await import(`${core}/dist/src/ide/ideContext.js`);

// Anything the client logs goes to stderr: stdout carries the protocol only.
console.log = console.info = console.debug = console.warn = (...args) => console.error(...args);
const emit = (message) => process.stdout.write(JSON.stringify(message) + '\n');
// IdeClient.openDiff leaves a rejected `promise.finally(release)` unhandled when the tool
// answers isError; the real CLI installs this handler too, so that does not kill it.
process.on('unhandledRejection', (reason) => console.error('unhandled rejection:', String(reason?.message ?? reason)));

let client;
const state = () => {
  const { status, details } = client.getConnectionStatus();
  return { status, details, ide: client.getDetectedIdeDisplayName() ?? null, diffing: client.isDiffingEnabled() };
};

const commands = {
  async connect() {
    client = await IdeClient.getInstance();
    client.addStatusChangeListener(({ status, details }) => emit({ event: 'status', status, details }));
    await client.connect({ logToConsole: false });
    const mcp = client.client;
    if (mcp) {
      const handle = mcp._onnotification.bind(mcp);
      mcp._onnotification = (message) => {
        if (message.method.startsWith('ide/diff')) {
          // at: CLOCK_MONOTONIC in ns, the clock of Python's time.monotonic_ns(), for latency benches.
          const at = process.hrtime.bigint().toString();
          emit({ event: 'notification', method: message.method, params: message.params, at });
        }
        return handle(message);
      };
    }
    return state();
  },
  status: async () => state(),
  context: async () => ideContextStore.get() ?? null,
  tools: async () => client.availableTools,
  openDiff: async ({ filePath, newContent }) => client.openDiff(filePath, newContent),
  closeDiff: async ({ filePath, suppressNotification }) => ({
    content: (await client.closeDiff(filePath, { suppressNotification })) ?? null,
  }),
  // What the CLI does when the user answers in the terminal: closeDiff with
  // suppressNotification, then settle the pending openDiff itself.
  async resolveDiffFromCli({ filePath, outcome }) {
    await client.resolveDiffFromCli(filePath, outcome);
    return null;
  },
  // The raw tool result, for checking exactly what the server answers.
  callTool: async ({ name, args }) => client.client.callTool({ name, arguments: args }),
  async disconnect() {
    await client.disconnect();
    return state();
  },
  exit: async () => null,
};

ideContextStore.subscribe((value) => emit({ event: 'context', value: value ?? null }));

// Commands run one after another, except that a pending openDiff (which resolves only
// when the user answers) must not hold up the commands after it.
let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  const handler = commands[request.cmd];
  queue = queue.then(async () => {
    if (!handler) {
      emit({ id: request.id, ok: false, error: `unknown command ${request.cmd}` });
      return;
    }
    const reply = handler(request).then(
      (result) => {
        emit({ id: request.id, ok: true, result });
        if (request.cmd === 'exit') process.exit(0);
      },
      (error) => emit({ id: request.id, ok: false, error: String(error?.message ?? error) }),
    );
    if (request.cmd !== 'openDiff') await reply;
  });
});
