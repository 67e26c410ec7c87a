#!/usr/bin/env node
import { runCli } from './cli.js';

// The `ferry` executable: the exit status is the command's.
runCli(process.argv.slice(2)).then((status) => process.exit(status));
