// js-md5's builds declare nothing of their own: the one src/core/util/md5.ts imports is the package's md5.
declare module 'js-md5/build/md5.modern.mjs' {
  export { md5 } from 'js-md5';
}
