// An MCP server in Node that attacks its own boundary (issue 38, tests/sandbox/test_attacks.py):
// the core attacks of tests/servers/attack_server.py, on @modelcontextprotocol/sdk's stdio server.
//
// Each tool answers one JSON object: `ok` (true: the attempt got through), `detail` (what
// happened), `errno` (the error's code, EACCES, ENOENT ..., when it failed on one) and what it
// saw. Tools: read_file(path), write_file(path, text), connect(host, port, send), list_pids(),
// spawn_many(count), whoami().
//
// The SDK comes from tests/interop/node_modules (`make tests/interop/node_modules`; it comes in
// with server-everything), resolved from that folder's package.json: run it as
// `node tests/servers/attack_server.mjs`.

import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "interop", "package.json"));
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { CallToolRequestSchema, ListToolsRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const TEXT_LIMIT = 64 * 1024;

function failed(error, seen = {}) {
  return { ok: false, detail: `${error.name}: ${error.message}`, errno: error.code ?? null, ...seen };
}

function readFile({ path: file }) {
  try {
    const text = fs.readFileSync(file).subarray(0, TEXT_LIMIT).toString("utf8");
    return { ok: true, detail: `read ${text.length} characters of ${file}`, path: file, text };
  } catch (error) {
    return failed(error, { path: file });
  }
}

function writeFile({ path: file, text }) {
  try {
    fs.writeFileSync(file, text);
    return { ok: true, detail: `wrote ${text.length} characters into ${file}`, path: file };
  } catch (error) {
    return failed(error, { path: file });
  }
}

function connect({ host, port, send = "", timeout = 10 }) {
  return new Promise((resolve) => {
    let received = "";
    let connected = false;
    const socket = net.createConnection({ host, port });
    const finish = (answer) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeout * 1000, () =>
      finish(
        connected
          ? { ok: true, detail: "connected, then timed out reading", host, port, received }
          : { ok: false, detail: `no connection within ${timeout} s`, errno: "ETIMEDOUT", host, port },
      ),
    );
    socket.on("connect", () => {
      connected = true;
      if (send) socket.write(send);
    });
    socket.on("data", (chunk) => {
      received = (received + chunk.toString("utf8")).slice(0, TEXT_LIMIT);
    });
    socket.on("end", () =>
      finish({ ok: true, detail: `connected, read ${received.length} characters`, host, port, received }),
    );
    socket.on("error", (error) => {
      if (connected) finish({ ok: true, detail: `connected, then ${error.code}`, host, port, received });
      else finish(failed(error, { host, port }));
    });
  });
}

function listPids() {
  try {
    const pids = fs
      .readdirSync("/proc")
      .filter((entry) => /^[0-9]+$/.test(entry))
      .map(Number)
      .sort((a, b) => a - b);
    return { ok: true, detail: `${pids.length} processes`, pids };
  } catch (error) {
    return failed(error, { pids: [] });
  }
}

// One child that sleeps: resolves with it once it runs, or with the error that stopped it.
function startSleeper(seconds) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn("sleep", [String(seconds)], { stdio: "ignore" });
    } catch (error) {
      resolve({ error });
      return;
    }
    child.once("spawn", () => resolve({ child }));
    child.once("error", (error) => resolve({ error }));
  });
}

function stopped(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    }
  });
}

async function spawnMany({ count, hold_seconds: hold = 300 }) {
  const children = [];
  let error = null;
  for (let i = 0; i < count; i++) {
    const started = await startSleeper(hold);
    if (started.error) {
      error = started.error;
      break;
    }
    children.push(started.child);
  }
  await Promise.all(children.map(stopped));
  let detail = `started ${children.length} of ${count} children, reaped ${children.length}`;
  if (error) detail += `; the first failure: ${error.code ?? ""} ${error.message}`;
  return {
    ok: error === null,
    detail,
    started: children.length,
    requested: count,
    reaped: children.length,
    errno: error ? (error.code ?? null) : null,
    error: error ? error.message : null,
  };
}

function whoami() {
  let cwd;
  try {
    cwd = process.cwd();
  } catch (error) {
    cwd = `unknown: ${error.message}`;
  }
  return {
    ok: true,
    detail: `pid ${process.pid}, uid ${process.getuid()}, cwd ${cwd}`,
    pid: process.pid,
    ppid: process.ppid,
    uid: process.getuid(),
    cwd,
    home: process.env.HOME ?? null,
    env: Object.keys(process.env).sort(),
    hostname: os.hostname(),
  };
}

const string = { type: "string" };
const number = { type: "number" };
const TOOLS = {
  read_file: { run: readFile, properties: { path: string }, required: ["path"], about: "Read a file" },
  write_file: {
    run: writeFile,
    properties: { path: string, text: string },
    required: ["path", "text"],
    about: "Write a file",
  },
  connect: {
    run: connect,
    properties: { host: string, port: number, send: string, timeout: number },
    required: ["host", "port"],
    about: "Open a TCP connection, send, read until the peer closes",
  },
  list_pids: { run: listPids, properties: {}, required: [], about: "The numeric entries of /proc" },
  spawn_many: {
    run: spawnMany,
    properties: { count: number, hold_seconds: number },
    required: ["count"],
    about: "Start count sleeping children, report, then kill and reap them",
  },
  whoami: { run: whoami, properties: {}, required: [], about: "pid, uid, cwd, HOME, env names, hostname" },
};

const server = new Server({ name: "attack-node", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: Object.entries(TOOLS).map(([name, tool]) => ({
    name,
    description: tool.about,
    inputSchema: { type: "object", properties: tool.properties, required: tool.required },
  })),
}));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const tool = TOOLS[request.params.name];
  if (!tool) {
    return { content: [{ type: "text", text: `no tool ${request.params.name}` }], isError: true };
  }
  let answer;
  try {
    answer = await tool.run(request.params.arguments ?? {});
  } catch (error) {
    answer = failed(error);
  }
  return { content: [{ type: "text", text: JSON.stringify(answer) }], structuredContent: answer };
});

await server.connect(new StdioServerTransport());
