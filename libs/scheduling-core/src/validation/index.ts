export { checkDns1123Label, checkIntegerRange, isDns1123Label } from './names';
export * from './pool-shape';
export { describeProblems, problem, shown, type ValidationProblem } from './problems';
export * from './workload-spec';
