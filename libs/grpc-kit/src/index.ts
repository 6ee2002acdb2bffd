export * from './errors';
export * from './server';
export * from './client';
export * from './auth';
export * from './watch-sender';
export * from './paging';
