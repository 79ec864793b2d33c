//! The one place that tells the interface versions apart when calling a
//! guest (rule W1). A plugin's exports are found in the bindings of the
//! version it was built for ([`Exports`]); each call on them
//! ([`ToolGuest`], [`ExtensionGuest`]) matches on that version once, and
//! hands back 0.3 types, an older guest's answers upgraded at entry.
//! Outside the bindings, only 0.3 types are seen.

use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

use super::v03::toolhost::plugin::types;
use super::{outcome_to_guest, v01, v02, v03};
use crate::inspect::{PluginWorld, WitVersion};
use crate::state::StoreState;

type Tool01 = v01::exports::toolhost::plugin::tool::GuestIndices;
type Ext01 = v01::exports::toolhost::plugin::extension::GuestIndices;
type Tool02 = v02::exports::toolhost::plugin::tool::GuestIndices;
type Ext02 = v02::exports::toolhost::plugin::extension::GuestIndices;
type Tool03 = v03::exports::toolhost::plugin::tool::GuestIndices;
type Ext03 = v03::exports::toolhost::plugin::extension::GuestIndices;

/// Where a plugin's exports are, in the bindings of the interface version
/// it was built for (rule W1); the extension's only for an extension.
pub(crate) enum Exports {
    V01 { tool: Tool01, ext: Option<Ext01> },
    V02 { tool: Tool02, ext: Option<Ext02> },
    V03 { tool: Tool03, ext: Option<Ext03> },
}

impl Exports {
    /// Finds the exports of a component of `world`, built for `wit`.
    pub(crate) fn new(
        pre: &InstancePre<StoreState>,
        world: PluginWorld,
        wit: WitVersion,
    ) -> wasmtime::Result<Self> {
        let extension = world == PluginWorld::ExtensionPlugin;
        Ok(match wit {
            WitVersion::V0_1 => Self::V01 {
                tool: Tool01::new(pre)?,
                ext: extension.then(|| Ext01::new(pre)).transpose()?,
            },
            WitVersion::V0_2 => Self::V02 {
                tool: Tool02::new(pre)?,
                ext: extension.then(|| Ext02::new(pre)).transpose()?,
            },
            WitVersion::V0_3 => Self::V03 {
                tool: Tool03::new(pre)?,
                ext: extension.then(|| Ext03::new(pre)).transpose()?,
            },
        })
    }

    /// The `tool` exports of `instance`.
    pub(crate) fn tool(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
    ) -> wasmtime::Result<ToolGuest> {
        Ok(match self {
            Self::V01 { tool, .. } => ToolGuest::V01(tool.load(store, instance)?),
            Self::V02 { tool, .. } => ToolGuest::V02(tool.load(store, instance)?),
            Self::V03 { tool, .. } => ToolGuest::V03(tool.load(store, instance)?),
        })
    }

    /// The `extension` exports of `instance`; `None` for a plugin that is
    /// not an extension.
    pub(crate) fn extension(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
    ) -> Option<wasmtime::Result<ExtensionGuest>> {
        Some(match self {
            Self::V01 { ext, .. } => ext.as_ref()?.load(store, instance).map(ExtensionGuest::V01),
            Self::V02 { ext, .. } => ext.as_ref()?.load(store, instance).map(ExtensionGuest::V02),
            Self::V03 { ext, .. } => ext.as_ref()?.load(store, instance).map(ExtensionGuest::V03),
        })
    }
}

/// A plugin's `tool` exports in one instance.
pub(crate) enum ToolGuest {
    V01(v01::exports::toolhost::plugin::tool::Guest),
    V02(v02::exports::toolhost::plugin::tool::Guest),
    V03(v03::exports::toolhost::plugin::tool::Guest),
}

impl ToolGuest {
    /// The guest's `list-tools`.
    pub(crate) async fn list_tools(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<types::ToolDescriptor>> {
        match self {
            Self::V01(g) => {
                let list = g.call_list_tools(store).await?;
                Ok(list.into_iter().map(v01::upgrade_descriptor).collect())
            }
            Self::V02(g) => {
                let list = g.call_list_tools(store).await?;
                Ok(list.into_iter().map(v02::upgrade_descriptor).collect())
            }
            Self::V03(g) => g.call_list_tools(store).await,
        }
    }

    /// The guest's `call-tool` of the tool `name` with `args` (JSON text).
    pub(crate) async fn call_tool(
        &self,
        store: &mut Store<StoreState>,
        name: &str,
        args: &str,
        info: &types::CallInfo,
    ) -> wasmtime::Result<Result<types::ToolOutput, types::ToolError>> {
        match self {
            Self::V01(g) => {
                let info = v01::call_info(info);
                let r = g.call_call_tool(store, name, args, &info).await?;
                Ok(r.map(v01::upgrade_output).map_err(v01::upgrade_error))
            }
            Self::V02(g) => {
                let info = v02::down::call_info(info);
                let r = g.call_call_tool(store, name, args, &info).await?;
                Ok(r.map(v02::up::output).map_err(v02::up::error))
            }
            Self::V03(g) => g.call_call_tool(store, name, args, info).await,
        }
    }
}

/// A plugin's `extension` exports in one instance.
pub(crate) enum ExtensionGuest {
    V01(v01::exports::toolhost::plugin::extension::Guest),
    V02(v02::exports::toolhost::plugin::extension::Guest),
    V03(v03::exports::toolhost::plugin::extension::Guest),
}

impl ExtensionGuest {
    /// The guest's `system-prompt`.
    pub(crate) async fn system_prompt(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Option<String>> {
        match self {
            Self::V01(g) => g.call_system_prompt(store).await,
            Self::V02(g) => g.call_system_prompt(store).await,
            Self::V03(g) => g.call_system_prompt(store).await,
        }
    }

    /// The guest's `before-call`. A 0.1 guest only allows or rejects.
    pub(crate) async fn before(
        &self,
        store: &mut Store<StoreState>,
        call: &types::HookCall,
    ) -> wasmtime::Result<types::BeforeDecision> {
        match self {
            Self::V01(g) => {
                let r = g.call_before_call(store, &v01::hook_call(call)).await?;
                Ok(match r {
                    Ok(()) => types::BeforeDecision::Allow,
                    Err(reason) => types::BeforeDecision::Reject(reason),
                })
            }
            Self::V02(g) => {
                let call = v02::down::hook_call(call);
                Ok(v02::up::before(g.call_before_call(store, &call).await?))
            }
            Self::V03(g) => g.call_before_call(store, call).await,
        }
    }

    /// The guest's `after-call` with the call's `outcome`. A 0.1 guest only
    /// observes: its decision is always to keep the outcome.
    pub(crate) async fn after(
        &self,
        store: &mut Store<StoreState>,
        call: &types::HookCall,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> wasmtime::Result<types::AfterDecision> {
        match self {
            Self::V01(g) => {
                let outcome = v01::outcome_to_guest(outcome);
                g.call_after_call(store, &v01::hook_call(call), &outcome)
                    .await?;
                Ok(types::AfterDecision::Keep)
            }
            Self::V02(g) => {
                let outcome = v02::down::outcome(outcome_to_guest(outcome));
                let call = v02::down::hook_call(call);
                Ok(v02::up::after(
                    g.call_after_call(store, &call, &outcome).await?,
                ))
            }
            Self::V03(g) => {
                let outcome = outcome_to_guest(outcome);
                g.call_after_call(store, call, &outcome).await
            }
        }
    }
}
