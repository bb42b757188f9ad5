#!/usr/bin/env node
// An async PostToolUse hook that records that it started and then waits for
// a gate nobody opens: if dsh waited for it, the turn would never end.
import { readFileSync, writeFileSync, existsSync } from "node:fs";

const payload = JSON.parse(readFileSync(0, "utf8"));
writeFileSync(process.env.ASYNC_STARTED, `${process.pid} ${payload.tool_name}\n`);
const wait = () => {
  if (existsSync(process.env.ASYNC_GATE)) {
    process.exit(0);
  }
  setTimeout(wait, 50);
};
wait();
