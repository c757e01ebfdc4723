//! Resources, prompts and completions in memory: registration mistakes found at build time,
//! capabilities advertised only for what is registered, reads and renders with their errors
//! masked, template variables decoded.

use std::collections::HashMap;

use fusion_runtime::{
    BuildError, prelude::*, prompt::PromptArg, prompt::PromptInfo, resource::ResourceContent,
    rmcp::ServerHandler as _,
};
use serde_json::{Value, json};

/// Echo the text back.
#[mcp_tool]
async fn echo(text: String) -> String {
    text
}

fn text_of(contents: &[fusion_runtime::rmcp::model::ResourceContents]) -> Value {
    serde_json::to_value(&contents[0]).unwrap_or(Value::Null)
}

#[test]
fn capabilities_advertise_only_what_is_registered() {
    let tools_only = Server::builder("t", "1").tool(echo).build();
    let capabilities = tools_only.get_info().capabilities;
    assert!(capabilities.tools.is_some());
    assert!(capabilities.resources.is_none(), "{capabilities:?}");
    assert!(capabilities.prompts.is_none(), "{capabilities:?}");
    assert!(capabilities.completions.is_none(), "{capabilities:?}");

    let everything = Server::builder("t", "1")
        .tool(echo)
        .resource("x://a", "a", "text/plain", || async { "a" })
        .prompt(
            PromptInfo::new("p", "A prompt")
                .arg(PromptArg::required("city", "A city").choices(["Paris"])),
            |_: HashMap<String, String>| async { "hi" },
        )
        .build();
    let capabilities = everything.get_info().capabilities;
    let resources = capabilities.resources.expect("resources advertised");
    assert_eq!(resources.subscribe, Some(true));
    assert!(capabilities.prompts.is_some());
    assert!(
        capabilities.completions.is_some(),
        "choices make completions"
    );
}

#[test]
fn registration_mistakes_are_build_errors() {
    let errors = Server::builder("t", "1")
        .resource("x://same", "one", "text/plain", || async { "1" })
        .resource("x://same", "two", "text/plain", || async { "2" })
        .resource_template(
            "x://{id",
            "broken",
            "text/plain",
            |_: HashMap<String, String>| async { "never" },
        )
        .prompt(PromptInfo::new("p", "one"), |()| async { "1" })
        .prompt(PromptInfo::new("p", "two"), |()| async { "2" })
        .complete_prompt_argument("nope", "arg", |_, _| Vec::new())
        .try_build()
        .err()
        .unwrap_or_default();
    assert!(
        errors.contains(&BuildError::DuplicateResource("x://same".into())),
        "{errors:?}"
    );
    assert!(
        errors.contains(&BuildError::DuplicatePrompt("p".into())),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|error| matches!(error, BuildError::InvalidUriTemplate { template, .. } if template == "x://{id")),
        "{errors:?}"
    );
    assert!(
        errors.contains(&BuildError::UnknownTarget("nope(arg)".into())),
        "{errors:?}"
    );
}

#[mcp_type]
#[derive(Deserialize)]
struct Row {
    table: String,
    id: String,
}

#[tokio::test]
async fn templates_decode_their_variables_and_failures_are_masked() {
    let server =
        Server::builder("t", "1")
            .resource_template(
                "db://{table}/{id}",
                "row",
                "application/json",
                |Row { table, id }| async move {
                    ResourceContent::json(&json!({"table": table, "id": id}))
                },
            )
            .resource("x://fails", "fails", "text/plain", || async {
                Err::<String, _>("password=hunter2 rejected")
            })
            .resource("x://panics", "panics", "text/plain", || async {
                if true {
                    panic!("resource exploded");
                }
                "never"
            })
            .resource("x://bytes", "bytes", "application/octet-stream", || async {
                vec![1_u8, 2, 3]
            })
            .build();

    let row = server.read_resource("db://users/7").await.expect("a row");
    let row = text_of(&row);
    assert_eq!(row["uri"], "db://users/7");
    assert_eq!(row["mimeType"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(row["text"].as_str().unwrap_or("")).unwrap_or(Value::Null),
        json!({"table": "users", "id": "7"})
    );

    let bytes = text_of(&server.read_resource("x://bytes").await.expect("bytes"));
    assert_eq!(bytes["blob"], "AQID");
    assert_eq!(bytes["mimeType"], "application/octet-stream");

    let failed = server
        .read_resource("x://fails")
        .await
        .expect_err("an error");
    assert!(failed.contains("reference"), "{failed}");
    assert!(
        !failed.contains("hunter2"),
        "details stay in the log: {failed}"
    );
    let panicked = server
        .read_resource("x://panics")
        .await
        .expect_err("an error");
    assert!(
        panicked.contains("reference") && !panicked.contains("exploded"),
        "{panicked}"
    );

    let missing = server
        .read_resource("db://users")
        .await
        .expect_err("no match");
    assert!(missing.contains("no resource"), "{missing}");
    // The server survives all of it.
    assert!(server.read_resource("db://a/b").await.is_ok());
}

#[tokio::test]
async fn prompts_check_required_arguments_and_mask_failures() {
    #[mcp_type]
    #[derive(Deserialize)]
    struct Args {
        city: String,
        days: Option<String>,
    }
    let server = Server::builder("t", "1")
        .prompt(
            PromptInfo::new("trip", "Plan a trip")
                .required("city", "Where")
                .optional("days", "How long"),
            |Args { city, days }: Args| async move {
                format!("{city} for {} days", days.unwrap_or_else(|| "3".into()))
            },
        )
        .prompt(PromptInfo::new("broken", "Fails"), |()| async {
            Err::<String, _>("secret detail")
        })
        .build();

    let listed = server.prompts();
    let arguments = listed[0].arguments.clone().unwrap_or_default();
    assert_eq!(arguments.len(), 2);
    assert_eq!(arguments[0].required, Some(true));
    assert_eq!(arguments[1].required, Some(false));

    let args = json!({"city": "Lisbon"});
    let rendered = server
        .get_prompt("trip", args.as_object().cloned())
        .await
        .expect("rendered");
    let message = serde_json::to_value(&rendered.messages[0]).unwrap_or(Value::Null);
    assert_eq!(message["role"], "user");
    assert_eq!(message["content"]["text"], "Lisbon for 3 days");

    let missing = server
        .get_prompt("trip", None)
        .await
        .expect_err("missing city");
    assert!(missing.contains("city"), "{missing}");
    let unknown = server.get_prompt("nope", None).await.expect_err("unknown");
    assert!(unknown.contains("`trip`"), "lists the prompts: {unknown}");
    let broken = server.get_prompt("broken", None).await.expect_err("fails");
    assert!(
        broken.contains("reference") && !broken.contains("secret"),
        "{broken}"
    );
}
