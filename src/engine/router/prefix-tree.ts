/**
 * An approximate radix tree of the token prefixes a replica has served: what a cache-aware
 * router believes the replica's KV cache holds. Approximate because the real cache evicts on
 * its own; this one forgets least-recently-used leaves when it holds more than its capacity.
 * Recency is a counter of operations, not time.
 */

type Node = { edge: number[]; children: Map<number, Node>; parent: Node | null; lastUsed: number };

export class PrefixTree {
  readonly #root: Node = { edge: [], children: new Map(), parent: null, lastUsed: 0 };
  #size = 0;
  #tick = 0;

  /** Tokens stored (the sum of edge lengths). */
  get size(): number {
    return this.#size;
  }

  /** The length of the longest stored prefix of `tokens`. */
  matchLength(tokens: readonly number[]): number {
    let node = this.#root;
    let matched = 0;
    while (matched < tokens.length) {
      const child = node.children.get(tokens[matched] as number);
      if (child === undefined) break;
      const common = commonLength(child.edge, tokens, matched);
      matched += common;
      if (common < child.edge.length) break;
      node = child;
    }
    return matched;
  }

  /** Stores `tokens` as a path, marking it used now. */
  insert(tokens: readonly number[]): void {
    const tick = ++this.#tick;
    let node = this.#root;
    let position = 0;
    node.lastUsed = tick;
    while (position < tokens.length) {
      const first = tokens[position] as number;
      const child = node.children.get(first);
      if (child === undefined) {
        const leaf: Node = {
          edge: tokens.slice(position),
          children: new Map(),
          parent: node,
          lastUsed: tick,
        };
        node.children.set(first, leaf);
        this.#size += leaf.edge.length;
        return;
      }
      const common = commonLength(child.edge, tokens, position);
      if (common < child.edge.length) {
        // Split the edge: a middle node holds the shared part.
        const middle: Node = {
          edge: child.edge.slice(0, common),
          children: new Map(),
          parent: node,
          lastUsed: tick,
        };
        child.edge = child.edge.slice(common);
        child.parent = middle;
        middle.children.set(child.edge[0] as number, child);
        node.children.set(first, middle);
        node = middle;
      } else {
        node = child;
      }
      node.lastUsed = tick;
      position += common;
    }
  }

  /** Removes least-recently-used leaves until at most `maxTokens` are stored. */
  evictTo(maxTokens: number): void {
    while (this.#size > maxTokens) {
      const leaf = this.#oldestLeaf();
      if (leaf === null || leaf.parent === null) return;
      leaf.parent.children.delete(leaf.edge[0] as number);
      this.#size -= leaf.edge.length;
    }
  }

  #oldestLeaf(): Node | null {
    let oldest: Node | null = null;
    const stack: Node[] = [...this.#root.children.values()];
    while (stack.length > 0) {
      const node = stack.pop() as Node;
      if (node.children.size === 0) {
        if (oldest === null || node.lastUsed < oldest.lastUsed) oldest = node;
      } else stack.push(...node.children.values());
    }
    return oldest;
  }
}

function commonLength(edge: readonly number[], tokens: readonly number[], offset: number): number {
  let length = 0;
  while (length < edge.length && offset + length < tokens.length && edge[length] === tokens[offset + length])
    length++;
  return length;
}
