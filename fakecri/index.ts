export { FakeRuntime, type FakeRuntimeOptions, type StatusCondition } from './server.js';
export { type FakeSandbox, type FakeContainer, type ContainerBehaviour, type ExecHandler, interpretCommand } from './state.js';
export { normalizeImageRef, type FakeImage } from './images.js';
export { criContractCases, type CriContractCase, type CriContractContext } from './contract.js';
