//! The partition of PMC's universe into link sets, each candidate's score against it, and the
//! split a selected path makes: the state the greedy in [`super::probe_matrix`] walks.

use super::candidates::Candidates;
use super::{PmcParams, SetCount};

/// Universe elements (physical links, then virtual links) as member lists of compact link ids.
fn universe(n: usize, beta: u32) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = (0..n as u32).map(|l| vec![l]).collect();
    let mut frontier = out.clone();
    for _ in 2..=beta {
        let mut next = Vec::new();
        for c in &frontier {
            for l in c[c.len() - 1] + 1..n as u32 {
                let mut v = c.clone();
                v.push(l);
                next.push(v);
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

/// The greedy's state: coverage weights per link and the partition of the universe.
pub(super) struct State<'a> {
    alpha: u32,
    set_count: SetCount,
    /// Number of universe elements.
    pub(super) elems: usize,
    cands: &'a Candidates,
    /// For β > 1, the universe elements on each candidate (CSR: `on[on_off[p]..on_off[p + 1]]`);
    /// for β = 1 they are the candidate's links and these are empty.
    pub(super) on_off: Vec<usize>,
    on: Vec<u32>,
    pub(super) w: Vec<u32>,
    set_of: Vec<u32>,
    pub(super) set_size: Vec<u32>,
    scratch: Vec<u32>,
    new_id: Vec<u32>,
}

impl<'a> State<'a> {
    /// One link set holding the whole universe, and no link covered yet.
    pub(super) fn new(cands: &'a Candidates, params: &PmcParams) -> Self {
        let n = cands.n;
        let elems = universe(n, params.beta.max(1));
        let (mut on_off, mut on) = (Vec::new(), Vec::new());
        if params.beta > 1 {
            on_off.push(0);
            let mut mask = vec![false; n];
            for p in 0..cands.len() {
                cands.links(p).iter().for_each(|&l| mask[l as usize] = true);
                on.extend(
                    (0..elems.len() as u32)
                        .filter(|&e| elems[e as usize].iter().any(|&l| mask[l as usize])),
                );
                on_off.push(on.len());
                cands
                    .links(p)
                    .iter()
                    .for_each(|&l| mask[l as usize] = false);
            }
        }
        State {
            alpha: params.alpha,
            set_count: params.set_count,
            elems: elems.len(),
            cands,
            on_off,
            on,
            w: vec![0; n],
            set_of: vec![0; elems.len()],
            set_size: vec![elems.len() as u32],
            // Set ids are < the number of elements.
            scratch: vec![0; elems.len()],
            new_id: vec![u32::MAX; elems.len()],
        }
    }

    fn on(&self, p: usize) -> &[u32] {
        if self.on_off.is_empty() {
            self.cands.links(p)
        } else {
            &self.on[self.on_off[p]..self.on_off[p + 1]]
        }
    }

    /// (score, useful) of candidate `p` in the current state.
    pub(super) fn score(&mut self, p: usize) -> (i64, bool) {
        let links = self.cands.links(p);
        let weight: i64 = links.iter().map(|&l| i64::from(self.w[l as usize])).sum();
        let under = links.iter().any(|&l| self.w[l as usize] < self.alpha);
        let (mut split, mut touched) = (0i64, 0i64);
        // `on` borrows self.cands / self.on, `scratch` is a separate field.
        let on: &[u32] = if self.on_off.is_empty() {
            self.cands.links(p)
        } else {
            &self.on[self.on_off[p]..self.on_off[p + 1]]
        };
        for &e in on {
            self.scratch[self.set_of[e as usize] as usize] += 1;
        }
        for &e in on {
            let s = self.set_of[e as usize] as usize;
            let c = std::mem::take(&mut self.scratch[s]);
            if c > 0 {
                touched += 1;
                split += i64::from(c < self.set_size[s]);
            }
        }
        let sets = match self.set_count {
            SetCount::Split => split,
            SetCount::Touched => touched,
        };
        (weight - sets, under || split > 0)
    }

    /// Adds `p` to the matrix: weights, then splits every set it cuts.
    pub(super) fn select(&mut self, p: usize) {
        for &l in self.cands.links(p) {
            self.w[l as usize] += 1;
        }
        let on: Vec<u32> = self.on(p).to_vec();
        for &e in &on {
            let s = self.set_of[e as usize] as usize;
            self.scratch[s] += 1;
        }
        let mut touched = Vec::new();
        for &e in &on {
            let s = self.set_of[e as usize] as usize;
            // A set lying wholly on the path is not split.
            if self.scratch[s] < self.set_size[s] && self.new_id[s] == u32::MAX {
                self.new_id[s] = self.set_size.len() as u32;
                self.set_size.push(0);
                touched.push(s);
            }
        }
        // Each element is visited once and still holds its old set id when read.
        for &e in &on {
            let s = self.set_of[e as usize] as usize;
            self.scratch[s] = 0;
            if self.new_id[s] == u32::MAX {
                continue;
            }
            self.set_size[s] -= 1;
            self.set_size[self.new_id[s] as usize] += 1;
            self.set_of[e as usize] = self.new_id[s];
        }
        for s in touched {
            self.new_id[s] = u32::MAX;
        }
    }

    pub(super) fn done(&self) -> bool {
        self.set_size.len() == self.elems && self.w.iter().all(|&w| w >= self.alpha)
    }
}
