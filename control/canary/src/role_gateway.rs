//! `canary role-gateway`: P4Runtime with roles in front of a switch whose server has none.

use clap::Args;
use std::time::Duration;

#[derive(Args)]
pub struct RoleGatewayArgs {
    /// Where controllers connect, e.g. 127.0.0.1:9559.
    #[arg(long)]
    listen: String,
    /// The switch's P4Runtime server, e.g. 127.0.0.1:50001.
    #[arg(long)]
    switch: String,
    #[arg(long, default_value_t = 1)]
    device_id: u64,
    /// The gateway's election id on the switch: it must be the switch's only primary.
    #[arg(long, default_value_t = u64::MAX)]
    election_id: u64,
}

pub fn command(a: RoleGatewayArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    use canary_switch::role_gateway::{GatewayConfig, RoleGateway};
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&a.listen)
            .await
            .with_context(|| format!("--listen {}: cannot listen", a.listen))?;
        let gw = RoleGateway::new(GatewayConfig {
            upstream: a.switch.clone(),
            device_id: a.device_id,
            election_id: u128::from(a.election_id),
            timeout: Duration::from_secs(2),
        });
        eprintln!(
            "role gateway: P4Runtime with roles on {} for switch {}",
            a.listen, a.switch
        );
        let served = gw.serve(listener);
        tokio::select! {
            _ = served => anyhow::bail!("the P4Runtime server stopped"),
            _ = canary_controller::daemon::shutdown_signal() => Ok(()),
        }
    })
}
