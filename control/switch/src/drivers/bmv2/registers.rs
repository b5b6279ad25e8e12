//! BMv2's registers over Thrift: the meters read whole or cell by cell, cells and HashPipe
//! zeroed. Thrift calls
//! block, so each runs on tokio's blocking pool with the connection moved in and back out; a
//! read the fabric gave up on is waited for before the next call.

use super::{read_plan, Bmv2Driver, CXT_ID};
use crate::bmv2_thrift::{Reply, ThriftClient, Timeouts, WireBytes};
use crate::contract::Register;
use crate::driver::DriverError;
use crate::meters::{Cell, MeterCells, RowCells};

/// A Thrift call on the blocking pool: it hands the connection back with its answer.
type ThriftTask<T> = tokio::task::JoinHandle<(Option<ThriftClient>, Result<T, DriverError>)>;

/// A register read on the blocking pool, kept by the driver while the fabric waits for it.
pub(super) type ThriftRead = ThriftTask<Vec<MeterCells>>;

impl Bmv2Driver {
    /// The switch's Thrift address, which BMv2's registers need.
    fn thrift_addr(&self) -> Result<String, DriverError> {
        self.bound.endpoint.thrift.clone().ok_or_else(|| {
            DriverError::Refused(format!(
                "{} has no `thrift` address in the switches file: BMv2 registers are read over Thrift",
                self.bound.name
            ))
        })
    }

    /// Starts `f` on the blocking pool with the kept Thrift connection, or a new one; the task
    /// hands the connection back with its answer (none when the call failed).
    fn spawn_on_thrift<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut ThriftClient) -> Result<T, DriverError> + Send + 'static,
    ) -> Result<ThriftTask<T>, DriverError> {
        let addr = self.thrift_addr()?;
        let (name, timeout, kept, wire) = (
            self.bound.name.clone(),
            self.opts.timeout,
            self.thrift.take(),
            self.thrift_wire.clone(),
        );
        Ok(tokio::task::spawn_blocking(move || {
            let mut t = match kept {
                Some(t) => t,
                None => match ThriftClient::connect_counting(
                    name,
                    addr.as_str(),
                    Timeouts {
                        connect: timeout,
                        io: timeout,
                    },
                    wire,
                ) {
                    Ok(t) => t,
                    Err(e) => return (None, Err(DriverError::Unreachable(e.to_string()))),
                },
            };
            let r = f(&mut t);
            (r.is_ok().then_some(t), r)
        }))
    }

    /// Runs `f` on the Thrift connection off the async runtime (connecting first if needed).
    async fn with_thrift<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut ThriftClient) -> Result<T, DriverError> + Send + 'static,
    ) -> Result<T, DriverError> {
        self.finish_pending().await;
        let (t, r) = self
            .spawn_on_thrift(f)?
            .await
            .map_err(|e| DriverError::Unreachable(format!("Thrift task: {e}")))?;
        self.thrift = t;
        r
    }

    /// Bytes sent to and received from the switch's Thrift server since the driver was made.
    pub fn thrift_bytes(&self) -> WireBytes {
        *self.thrift_wire.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a read the fabric gave up on (bounded by the Thrift I/O timeout inside it).
    async fn finish_pending(&mut self) {
        if let Some(p) = self.pending.take() {
            if let Ok((t, _)) = p.await {
                self.thrift = t;
            }
        }
    }

    /// Every meter register, read whole in one pipelined batch.
    pub(super) async fn read_meter_registers(&mut self) -> Result<Vec<MeterCells>, DriverError> {
        let names = rows(&self.prog.program.meters);
        let usm_rows = self.prog.program.meters.usm.len();
        self.read_on_thrift(move |t| read_cells(t, &names, usm_rows))
            .await
    }

    /// The meter cells `cells`, each register read cell by cell or whole, whichever moves
    /// fewer bytes ([`read_plan`]), in one pipelined batch.
    pub(super) async fn read_some_meter_cells(
        &mut self,
        cells: &[Cell],
    ) -> Result<Vec<MeterCells>, DriverError> {
        let layout = self.prog.program.meters.clone();
        let plan = read_plan::plan(&layout, cells);
        self.read_on_thrift(move |t| {
            let replies = t
                .pipeline(&read_plan::calls(&plan, CXT_ID))
                .map_err(|e| DriverError::Unreachable(e.to_string()))?;
            let answers: Vec<Vec<i64>> = replies
                .into_iter()
                .map(|r| match r {
                    Reply::Values(v) => v,
                    Reply::Value(v) => vec![v],
                    Reply::Done => Vec::new(),
                })
                .collect();
            read_plan::fill(&layout, &plan, &answers)
                .map(|m| vec![m])
                .map_err(DriverError::Refused)
        })
        .await
    }

    /// A meter read `f` on the Thrift connection, kept by the driver while awaited.
    async fn read_on_thrift(
        &mut self,
        f: impl FnOnce(&mut ThriftClient) -> Result<Vec<MeterCells>, DriverError> + Send + 'static,
    ) -> Result<Vec<MeterCells>, DriverError> {
        self.finish_pending().await;
        let task = self.spawn_on_thrift(f)?;
        // Kept here while awaited: if the caller gives up, the next call finishes it.
        self.pending = Some(task);
        let r = self.pending.as_mut().expect("just set").await;
        self.pending = None;
        let (t, r) = r.map_err(|e| DriverError::Unreachable(format!("Thrift task: {e}")))?;
        self.thrift = t;
        r
    }

    /// Cells `cells` of the meters zeroed, one register write each.
    pub(super) async fn zero_meter_cells(&mut self, cells: &[Cell]) -> Result<(), DriverError> {
        let meters = &self.prog.program.meters;
        let targets: Vec<(String, i32)> = cells
            .iter()
            .flat_map(|c| {
                let row = if c.dsm {
                    &meters.dsm[c.row]
                } else {
                    &meters.usm[c.row]
                };
                [
                    (row.id.name.clone(), c.index as i32),
                    (row.count.name.clone(), c.index as i32),
                ]
            })
            .collect();
        self.with_thrift(move |t| {
            for (name, i) in &targets {
                t.register_write(CXT_ID, name, *i, 0)
                    .map_err(|e| DriverError::Unreachable(e.to_string()))?;
            }
            Ok(())
        })
        .await
    }

    /// Every HashPipe register zeroed (`bm_register_write_range`, safe while packets flow).
    pub(super) async fn zero_hashpipe(&mut self) -> Result<(), DriverError> {
        let regs: Vec<(String, usize)> = self
            .prog
            .program
            .hashpipe
            .iter()
            .map(|r: &Register| (r.name.clone(), r.size))
            .collect();
        self.with_thrift(move |t| {
            let arrays: Vec<(&str, usize)> = regs.iter().map(|(n, s)| (n.as_str(), *s)).collect();
            t.register_zero_many(CXT_ID, &arrays)
                .map_err(|e| DriverError::Unreachable(e.to_string()))
        })
        .await
    }
}

/// The meters' (ID, count) register names per row, USM rows first.
fn rows(meters: &crate::contract::MeterRegisters) -> Vec<(String, String)> {
    meters
        .rows()
        .map(|r| (r.id.name.clone(), r.count.name.clone()))
        .collect()
}

/// One read of every meter register: the meters as the one pipeline holds them.
fn read_cells(
    t: &mut ThriftClient,
    names: &[(String, String)],
    usm_rows: usize,
) -> Result<Vec<MeterCells>, DriverError> {
    let flat: Vec<&str> = names
        .iter()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .collect();
    let arrays = t
        .register_read_all_many(CXT_ID, &flat)
        .map_err(|e| DriverError::Unreachable(e.to_string()))?;
    Ok(vec![meter_cells(&arrays, usm_rows)])
}

/// The meter rows from the register arrays as read, (ID, count) per row, USM rows first. An
/// unpaired last array is left out (the decoder then finds a row missing).
pub fn meter_cells(arrays: &[Vec<i64>], usm_rows: usize) -> MeterCells {
    let as_u64 = |v: &Vec<i64>| v.iter().map(|&x| x as u64).collect::<Vec<u64>>();
    let mut cells = MeterCells::default();
    for (i, pair) in arrays.chunks_exact(2).enumerate() {
        // The ID register first (see `meters`): it is first in each pair of names.
        let row = RowCells::from_bmv2(&as_u64(&pair[0]), &as_u64(&pair[1]));
        if i < usm_rows {
            cells.usm.push(row);
        } else {
            cells.dsm.push(row);
        }
    }
    cells
}
