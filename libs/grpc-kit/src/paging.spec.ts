import { MAX_PAGE_SIZE, paginate } from './paging';

const names = (n: number) => Array.from({ length: n }, (_, i) => `node-${String(i).padStart(4, '0')}`);
const id = (s: string) => s;

describe('paginate', () => {
  it('walks every item exactly once, in key order, whatever the input order', () => {
    const all = names(25).reverse();
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const page = paginate(all, id, 10, token);
      seen.push(...page.items);
      token = page.nextPageToken;
      pages++;
    } while (token !== '');
    expect(pages).toBe(3);
    expect(seen).toEqual(names(25));
  });

  it('does not repeat or skip items when the list changes between pages', () => {
    const first = paginate(names(10), id, 5, '');
    // node-0002 goes away and node-0004a arrives before the next call.
    const changed = [...names(10).filter((n) => n !== 'node-0002'), 'node-0004a'];
    const second = paginate(changed, id, 5, first.nextPageToken);
    expect(second.items).toEqual(['node-0004a', 'node-0005', 'node-0006', 'node-0007', 'node-0008']);
  });

  it('returns everything for page_size 0, caps big pages, and names bad arguments', () => {
    expect(paginate(names(3), id, 0, '')).toEqual({ items: names(3), nextPageToken: '' });
    expect(paginate(names(MAX_PAGE_SIZE + 5), id, 1_000_000, '').items).toHaveLength(MAX_PAGE_SIZE);
    expect(() => paginate(names(3), id, -1, '')).toThrow('INVALID_ARGUMENT: page_size: expected an integer 0-1000 (0: everything at once), got -1');
    expect(() => paginate(names(3), id, 2, 'garbage')).toThrow(/^INVALID_ARGUMENT: page_token: expected the next_page_token of a previous page/);
  });
});
