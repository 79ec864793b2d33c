//! A plugin built for a future, incompatible version of the interfaces
//! (`toolhost:plugin@1.0.0`). The host must refuse it and say which version
//! it found.

wit_bindgen::generate!({
    inline: r#"
        package toolhost:plugin@1.0.0;

        interface tool {
            list-tools: func() -> list<string>;
        }

        world tool-plugin {
            export tool;
        }
    "#,
    world: "tool-plugin",
});

struct Future;

impl exports::toolhost::plugin::tool::Guest for Future {
    fn list_tools() -> Vec<String> {
        vec!["from-the-future".into()]
    }
}

export!(Future);
