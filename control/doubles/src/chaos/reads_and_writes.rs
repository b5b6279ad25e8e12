//! A chaos driver's rule writes and meter reads, with the faults that touch them.

use super::{lock, ChaosDriver};
use canary_switch::driver::DriverError;
use canary_switch::entries::Write;
use canary_switch::meters::MeterCells;

impl ChaosDriver {
    pub(super) async fn write_now(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)> {
        if let Err(e) = self.check() {
            return (0..writes.len()).map(|i| (i, e.clone())).collect();
        }
        let mut refused = Vec::new();
        let mut pass = Vec::new();
        let mut index = Vec::new();
        for (i, w) in writes.iter().enumerate() {
            let rule = matches!(
                w.entry.table,
                canary_switch::contract::Table::Usm
                    | canary_switch::contract::Table::Dsm
                    | canary_switch::contract::Table::Hh
            );
            if rule && self.refuse_writes > 0 {
                self.refuse_writes -= 1;
                refused.push((i, DriverError::Refused("chaos: write refused".into())));
            } else {
                pass.push(w.clone());
                index.push(i);
            }
        }
        let mut plane = lock(&self.plane);
        let failed = self.side().tables.write(plane.switch_mut(self.ix), &pass);
        refused.extend(
            failed
                .into_iter()
                .map(|(j, e)| (index[j], DriverError::Refused(e.to_string()))),
        );
        refused.sort_by_key(|(i, _)| *i);
        refused
    }

    pub(super) async fn read_meters_now(&mut self) -> Result<Vec<MeterCells>, DriverError> {
        self.check()?;
        if let Some((delay, reads)) = self.slow {
            self.slow = (reads > 1).then_some((delay, reads - 1));
            tokio::time::sleep(delay).await;
        }
        let mut cells = {
            let mut plane = lock(&self.plane);
            self.side().tables.meter_cells(plane.switch_mut(self.ix))
        };
        if std::mem::take(&mut self.torn) {
            // The read stopped halfway through the last DSM row.
            if let Some(row) = cells.dsm.last_mut() {
                let half = row.count.len() / 2;
                row.count.truncate(half);
            }
        }
        Ok(vec![cells])
    }
}
