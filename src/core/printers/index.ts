export { humanDuration, timestampMs, timestampSince } from './duration.js';
export { podAge, podCells, podColumns, podWideCells, restartsCell, type PodColumns } from './pod.js';
