export * from './errors';
export * from './server';
export * from './client';
export * from './watch-sender';
export * from './paging';
export * from './access';
