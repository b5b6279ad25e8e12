//! Edge colouring of a bipartite multigraph with as many colours as its largest degree (König's
//! theorem), by alternating paths.
//!
//! Each edge (a, b) takes a colour α free at a. If α is taken at b, b has some colour β free
//! (b has fewer than `colours` edges so far); the path from b that alternates α, β, α, … never
//! reaches a (a has no α edge, and in a bipartite graph the path enters a's side only over α
//! edges), so swapping α and β along it frees α at b without disturbing a.
//! Written here: no crate on the registry colours multigraph edges.

const NONE: u32 = u32::MAX;

/// Colours `edges` (left vertex, right vertex) with `colours` colours so no two edges at one
/// vertex share one. Every vertex must have at most `colours` edges.
pub(super) fn colour_edges(
    edges: &[(u32, u32)],
    n_left: usize,
    n_right: usize,
    colours: usize,
) -> Vec<u32> {
    let k = colours.max(1);
    let mut g = Graph {
        k,
        words: k.div_ceil(64),
        at: vec![NONE; (n_left + n_right) * k],
        used: vec![0u64; (n_left + n_right) * k.div_ceil(64)],
        ends: edges.iter().map(|&(a, b)| (a, n_left as u32 + b)).collect(),
        colour: vec![NONE; edges.len()],
    };
    let mut path = Vec::new();
    for e in 0..edges.len() {
        let (a, b) = g.ends[e];
        let alpha = g.first_free(a);
        if g.at(b, alpha) != NONE {
            let beta = g.first_free(b);
            // The α/β path from b, then its colours swapped.
            path.clear();
            let (mut v, mut c) = (b, alpha);
            while let Some(f) = g.edge_at(v, c) {
                path.push(f);
                v = g.other_end(f, v);
                c = if c == alpha { beta } else { alpha };
            }
            for &f in &path {
                g.unset(f);
            }
            for &f in &path {
                let swapped = if g.colour[f] as usize == alpha {
                    beta
                } else {
                    alpha
                };
                g.set(f, swapped);
            }
        }
        g.set(e, alpha);
    }
    g.colour
}

struct Graph {
    k: usize,
    words: usize,
    /// `at[v * k + c]`: the edge of colour c at vertex v.
    at: Vec<u32>,
    /// Colours taken at each vertex, `words` u64 per vertex.
    used: Vec<u64>,
    ends: Vec<(u32, u32)>,
    colour: Vec<u32>,
}

impl Graph {
    fn at(&self, v: u32, c: usize) -> u32 {
        self.at[v as usize * self.k + c]
    }

    fn edge_at(&self, v: u32, c: usize) -> Option<usize> {
        let e = self.at(v, c);
        (e != NONE).then_some(e as usize)
    }

    fn other_end(&self, e: usize, v: u32) -> u32 {
        let (a, b) = self.ends[e];
        if a == v {
            b
        } else {
            a
        }
    }

    fn first_free(&self, v: u32) -> usize {
        let w = &self.used[v as usize * self.words..(v as usize + 1) * self.words];
        let (i, word) = w
            .iter()
            .enumerate()
            .find(|(_, &x)| x != u64::MAX)
            .expect("a vertex has at most `colours` edges");
        let c = i * 64 + (!word).trailing_zeros() as usize;
        debug_assert!(c < self.k, "a vertex has at most `colours` edges");
        c
    }

    fn mark(&mut self, v: u32, c: usize, e: u32) {
        self.at[v as usize * self.k + c] = e;
        let bit = 1u64 << (c % 64);
        let word = &mut self.used[v as usize * self.words + c / 64];
        if e == NONE {
            *word &= !bit;
        } else {
            *word |= bit;
        }
    }

    fn set(&mut self, e: usize, c: usize) {
        let (a, b) = self.ends[e];
        self.mark(a, c, e as u32);
        self.mark(b, c, e as u32);
        self.colour[e] = c as u32;
    }

    fn unset(&mut self, e: usize) {
        let (a, b) = self.ends[e];
        let c = self.colour[e] as usize;
        self.mark(a, c, NONE);
        self.mark(b, c, NONE);
    }
}
