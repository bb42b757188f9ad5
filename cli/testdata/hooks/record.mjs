#!/usr/bin/env node
// Appends the payload to $RECORD_LOG, one JSON line per call.
import { readFileSync, appendFileSync } from "node:fs";

const payload = JSON.parse(readFileSync(0, "utf8"));
appendFileSync(process.env.RECORD_LOG, JSON.stringify(payload) + "\n");
