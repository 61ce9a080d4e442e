// Container logs in the CRI log format: the format and its parser, reading forwards (rotated and gzipped
// files included), reading from the end (--tail), and following (-f).
export { CriLogParser, parseCriLine, selectRecords, type LogRecord, type LogSelection, type LogStream } from './format.js';
export {
  containerLogFiles,
  readContainerLog,
  readLogFile,
  readLogTail,
  readRotatedLogs,
  restartCountOfLog,
  streamContainerLog,
  streamRotatedLogs,
} from './read.js';
export { readContainerLogTail, readLogFileTail, type LogTail } from './tail.js';
export { followContainerLog, type FollowOptions } from './follow.js';
