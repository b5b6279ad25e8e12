//! One bucket of each meter and one row of Algorithms 1 and 2 on it: what turns a bucket dirty.
//! Apart from the meters, which only place flows in rows and keep the books.

use crate::flow::FlowId;
use serde::{Deserialize, Serialize};

/// Bits of a DSM bucket: dirtyFlag (1) + flowID (104) + pathBF (32) + count (32).
pub const DSM_BUCKET_BITS: usize = 1 + 104 + 32 + 32;
/// Bits of a USM bucket: dirtyFlag (1) + flowID (104) + count (32).
pub const USM_BUCKET_BITS: usize = 1 + 104 + 32;

/// What the meters need to know about a bucket.
pub trait Bucket: Clone + Default {
    fn is_dirty(&self) -> bool;
    fn flow(&self) -> Option<FlowId>;
}

/// A USM bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsmBucket {
    pub dirty: bool,
    pub flow: Option<FlowId>,
    pub count: u32,
}

/// A DSM bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsmBucket {
    pub dirty: bool,
    pub flow: Option<FlowId>,
    pub path_bf: u32,
    pub count: u32,
}

impl Bucket for UsmBucket {
    fn is_dirty(&self) -> bool {
        self.dirty
    }
    fn flow(&self) -> Option<FlowId> {
        self.flow
    }
}

impl Bucket for DsmBucket {
    fn is_dirty(&self) -> bool {
        self.dirty
    }
    fn flow(&self) -> Option<FlowId> {
        self.flow
    }
}

impl UsmBucket {
    /// `n` consecutive executions of one row of Algorithm 2.
    pub(super) fn update_n(&mut self, flow: &FlowId, n: u32) {
        if n == 0 {
            return;
        }
        match self.flow {
            None => {
                self.flow = Some(*flow);
                self.count = n;
            }
            Some(resident) => {
                // Another flow dirties the bucket. A dirty bucket's count is never read, so it
                // counts on (the data plane keeps the dirty flag with the rule ID, the count
                // apart, and would need a third condition to stop it).
                self.dirty |= resident != *flow;
                self.count = self.count.wrapping_add(n);
            }
        }
    }
}

impl DsmBucket {
    /// `n` consecutive executions of one row of Algorithm 1.
    pub(super) fn update_n(&mut self, flow: &FlowId, path_bf: u32, n: u32) {
        if n == 0 {
            return;
        }
        match self.flow {
            None => {
                self.flow = Some(*flow);
                self.path_bf = path_bf;
                self.count = n;
            }
            Some(resident) => {
                self.dirty |= resident != *flow || self.path_bf != path_bf;
                self.count = self.count.wrapping_add(n);
            }
        }
    }
}
