export { isDns1123Label } from './names';
export * from './pool-shape';
export { describeProblems, type ValidationProblem } from './problems';
export * from './workload-spec';
