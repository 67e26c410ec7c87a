#!/usr/bin/env node
import { runCli } from './cli.js';

// A reader of the output that goes away (`ferry serve | head -1`, a log shipper that died) must
// neither stop the server nor keep it from stopping: writes to a closed pipe are dropped. Left
// unhandled, the first one (EPIPE) kept `ferry serve` from draining on SIGTERM.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

// The `ferry` executable: the exit status is the command's.
runCli(process.argv.slice(2)).then((status) => process.exit(status));
