//! The fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`
//! 0.1.16, its active server scenarios), served over Streamable HTTP.
//!
//! ```sh
//! cargo run --example conformance -- --port 8931
//! npx -y @modelcontextprotocol/conformance@0.1.16 server --url http://127.0.0.1:8931/mcp
//! ```
//!
//! `--port 0` picks a free port; the URL is printed on stderr either way. `--stateless`
//! serves without sessions (the suite's sampling, elicitation and subscription scenarios
//! need a session, so they fail that way). `tests/clients/conformance.rs` runs the suite against it.
//! `--stdio` serves the same fixtures over stdin/stdout (the Python client asks its tools'
//! questions over stdio with them: `tests/python/stdio_questions.py`).
//!
//! Every tool, resource and prompt below is named and shaped as the suite's scenario
//! descriptions (`src/scenarios/server/` in the suite) ask.

use std::{collections::HashMap, process::ExitCode, time::Duration};

use fusion_runtime::{
    Call, ContentBlock, HttpOptions, Tool,
    call::{ClientRequestError, LogLevel},
    prelude::*,
    prompt,
    prompt::PromptArg,
    prompt::PromptInfo,
    resource,
    resource::ResourceContent,
    serde_json::{self, json},
    tasks::Tasking,
};

/// A 1×1 red pixel, as PNG.
const RED_PIXEL_PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A tenth of a second of silence: 8 kHz, 8-bit mono PCM in a WAV container.
fn silent_wav() -> Vec<u8> {
    let samples = 800_u32;
    let mut wav = Vec::with_capacity(44 + samples as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16_u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1_u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1_u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000_u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&8000_u32.to_le_bytes()); // byte rate
    wav.extend_from_slice(&1_u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8_u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&samples.to_le_bytes());
    wav.resize(44 + samples as usize, 0x80); // 8-bit PCM silence is 128
    wav
}

/// The error `test_error_handling` returns on purpose.
#[derive(Debug, thiserror::Error, Classify)]
enum Intentional {
    /// Shown to the model as it is.
    #[error("This tool intentionally returns an error for testing")]
    #[invalid_input]
    Always,
}

/// Returns a fixed text (conformance: tools-call-simple-text).
#[mcp_tool(read_only)]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns a 1×1 red PNG (conformance: tools-call-image).
#[mcp_tool(read_only)]
async fn test_image_content() -> Vec<ContentBlock> {
    vec![resource::image(&RED_PIXEL_PNG, "image/png")]
}

/// Returns a short silent WAV (conformance: tools-call-audio).
#[mcp_tool(read_only)]
async fn test_audio_content() -> Vec<ContentBlock> {
    vec![resource::audio(&silent_wav(), "audio/wav")]
}

/// Returns an embedded text resource (conformance: tools-call-embedded-resource).
#[mcp_tool(read_only)]
async fn test_embedded_resource() -> Vec<ContentBlock> {
    vec![resource::embedded_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )]
}

/// Returns text, an image and an embedded resource (conformance: tools-call-mixed-content).
#[mcp_tool(read_only)]
async fn test_multiple_content_types() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        resource::image(&RED_PIXEL_PNG, "image/png"),
        resource::embedded_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ]
}

/// Sends three log messages while it runs (conformance: tools-call-with-logging).
#[mcp_tool(read_only)]
async fn test_tool_with_logging(#[call] call: &Call) -> &'static str {
    call.log(LogLevel::Info, "Tool execution started").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    call.log(LogLevel::Info, "Tool processing data").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    call.log(LogLevel::Info, "Tool execution completed").await;
    "Tool with logging executed successfully"
}

/// Always fails, with `isError` (conformance: tools-call-error).
#[mcp_tool(read_only)]
async fn test_error_handling() -> Result<String, Intentional> {
    Err(Intentional::Always)
}

/// Reports progress 0, 50 and 100 of 100 (conformance: tools-call-with-progress).
#[mcp_tool(read_only)]
async fn test_tool_with_progress(#[call] call: &Call) -> &'static str {
    call.progress(0.0, Some(100.0), None).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    call.progress(50.0, Some(100.0), None).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    call.progress(100.0, Some(100.0), None).await;
    "Tool with progress executed successfully"
}

/// Asks the client's model to answer a prompt (conformance: tools-call-sampling).
#[mcp_tool]
async fn test_sampling(
    #[call] call: &Call,
    /// The prompt to send to the LLM.
    prompt: String,
) -> Result<String, ClientRequestError> {
    let answer = call.sample_text(&prompt, 100).await?;
    Ok(format!("LLM response: {answer}"))
}

/// Asks the user for a username and an email (conformance: tools-call-elicitation).
#[mcp_tool]
async fn test_elicitation(
    #[call] call: &Call,
    /// The message to show the user.
    message: String,
) -> Result<String, ClientRequestError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    let answer = call.elicit(&message, schema).await?;
    Ok(format!(
        "User response: action={}, content={}",
        answer.action.as_str(),
        answer.content
    ))
}

/// Asks for a form whose fields have defaults (conformance: elicitation-sep1034-defaults).
#[mcp_tool]
async fn test_elicitation_sep1034_defaults(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }
    });
    let answer = call
        .elicit(
            "Please review and update the form fields with defaults",
            schema,
        )
        .await?;
    Ok(format!(
        "Elicitation completed: action={}, content={}",
        answer.action.as_str(),
        answer.content
    ))
}

/// Asks for a form with every kind of enum (conformance: elicitation-sep1330-enums).
#[mcp_tool]
async fn test_elicitation_sep1330_enums(#[call] call: &Call) -> Result<String, ClientRequestError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]
                }
            }
        }
    });
    let answer = call.elicit("Please pick from the enums", schema).await?;
    Ok(format!(
        "Elicitation completed: action={}, content={}",
        answer.action.as_str(),
        answer.content
    ))
}

/// The form of a one-string elicitation.
fn one_string_form(field: &str) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {field: {"type": "string"}},
        "required": [field]
    })
}

/// Asks the user's name, under the key `user_name` or, unkeyed, numbered in asking order;
/// "stranger" when the accepted form holds none.
async fn ask_name(call: &Call, keyed: bool) -> Result<String, ClientRequestError> {
    let form = one_string_form("name");
    let answer = if keyed {
        call.ask("user_name")
            .elicit("What is your name?", form)
            .await?
    } else {
        call.elicit("What is your name?", form).await?
    };
    Ok(answer.content["name"]
        .as_str()
        .unwrap_or("stranger")
        .to_owned())
}

/// Asks for the user's name (conformance: input-required-result-basic-elicitation).
#[mcp_tool(read_only)]
async fn test_input_required_result_elicitation(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    Ok(format!("Hello, {}!", ask_name(call, true).await?))
}

/// Asks the client's model a question (conformance: input-required-result-basic-sampling).
#[mcp_tool(read_only)]
async fn test_input_required_result_sampling(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let answer = call
        .ask("capital_question")
        .sample_text("What is the capital of France?", 100)
        .await?;
    Ok(format!("The model answered: {answer}"))
}

/// Lists the client's roots (conformance: input-required-result-basic-list-roots).
#[mcp_tool(read_only)]
async fn test_input_required_result_list_roots(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let roots = call.ask("client_roots").list_roots().await?;
    let uris: Vec<&str> = roots.iter().map(|root| root.uri.as_str()).collect();
    Ok(format!("The client's roots: {}", uris.join(", ")))
}

/// Asks for a confirmation, carried in the request state
/// (conformance: input-required-result-request-state).
#[mcp_tool(read_only)]
async fn test_input_required_result_request_state(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let form = json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    });
    let answer = call.ask("confirm").elicit("Please confirm", form).await?;
    Ok(format!("state-ok: confirmed={}", answer.content["ok"]))
}

/// Asks three questions at once (conformance: input-required-result-multiple-input-requests).
#[mcp_tool(read_only)]
async fn test_input_required_result_multiple_inputs(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let (name, greeting, roots) = tokio::join!(
        call.ask("user_name")
            .elicit("What is your name?", one_string_form("name")),
        call.ask("greeting").sample_text("Generate a greeting", 50),
        call.ask("client_roots").list_roots(),
    );
    Ok(format!(
        "{} {} ({} roots)",
        greeting?,
        name?.content["name"].as_str().unwrap_or("stranger"),
        roots?.len()
    ))
}

/// Asks two questions, one a round (conformance: input-required-result-multi-round).
#[mcp_tool(read_only)]
async fn test_input_required_result_multi_round(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let name = call
        .ask("step1")
        .elicit("Step 1: What is your name?", one_string_form("name"))
        .await?;
    let color = call
        .ask("step2")
        .elicit(
            "Step 2: What is your favorite color?",
            one_string_form("color"),
        )
        .await?;
    Ok(format!(
        "{} likes {}",
        name.content["name"].as_str().unwrap_or("someone"),
        color.content["color"].as_str().unwrap_or("no color")
    ))
}

/// Asks for a name; its signed request state refuses tampering
/// (conformance: input-required-result-tampered-state).
#[mcp_tool(read_only)]
async fn test_input_required_result_tampered_state(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    Ok(format!("Hello, {}!", ask_name(call, true).await?))
}

/// Asks only what the client can answer (conformance: input-required-result-capability-check).
#[mcp_tool(read_only)]
async fn test_input_required_result_capabilities(
    #[call] call: &Call,
) -> Result<String, ClientRequestError> {
    let name = match call
        .ask("user_name")
        .elicit("What is your name?", one_string_form("name"))
        .await
    {
        Ok(answer) => answer.content["name"].as_str().map(str::to_owned),
        Err(ClientRequestError::Unsupported(_)) => None,
        Err(error) => return Err(error),
    };
    let greeting = match call
        .ask("greeting")
        .sample_text("Generate a greeting", 50)
        .await
    {
        Ok(text) => Some(text),
        Err(ClientRequestError::Unsupported(_)) => None,
        Err(error) => return Err(error),
    };
    Ok(format!("name={name:?} greeting={greeting:?}"))
}

/// Needs sampling, which the client must declare (conformance: server-stateless).
#[mcp_tool(read_only)]
async fn test_missing_capability(#[call] call: &Call) -> Result<String, ClientRequestError> {
    call.sample_text("Say hello", 20).await
}

/// Asks the user through the request's own answer (conformance: server-stateless).
#[mcp_tool(read_only)]
async fn test_streaming_elicitation(#[call] call: &Call) -> Result<String, ClientRequestError> {
    Ok(format!("Hello, {}!", ask_name(call, false).await?))
}

/// Logs, at the level the request asked for (conformance: server-stateless).
#[mcp_tool(read_only)]
async fn test_logging_tool(#[call] call: &Call) -> &'static str {
    call.log(LogLevel::Info, "a log message").await;
    "logged"
}

/// Changes nothing: the tool list is fixed (conformance: server-stateless).
#[mcp_tool(read_only)]
async fn test_trigger_tool_change() -> &'static str {
    "the tool list does not change"
}

/// Answers at once; the stream is not closed mid-call (conformance: server-sse-polling).
#[mcp_tool(read_only)]
async fn test_reconnection() -> &'static str {
    "Reconnection test completed"
}

/// Lists a JSON Schema 2020-12 input schema as written (conformance: json-schema-2020-12).
#[mcp_tool(read_only)]
async fn json_schema_2020_12_tool(
    /// A name.
    name: Option<String>,
) -> String {
    format!("Hello, {}", name.unwrap_or_default())
}

/// Echoes the region, which a client also sends as the `Mcp-Param-Region` header
/// (conformance: http-custom-header-server-validation).
#[mcp_tool(read_only)]
async fn test_header_param(
    /// The region.
    region: String,
) -> String {
    format!("region={region}")
}

/// Greets (conformance: tasks-*, a tool that never runs as a task).
#[mcp_tool(read_only)]
async fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Sleeps `seconds`, then answers (conformance: tasks-*, a task).
#[mcp_tool(read_only, timeout = "5m")]
async fn slow_compute(
    /// How long to work.
    seconds: Option<f64>,
) -> String {
    let seconds = seconds.unwrap_or(1.0).clamp(0.0, 120.0);
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    format!("Computed after {seconds} seconds")
}

/// Fails as a tool after a second (conformance: tasks-*, a task).
#[mcp_tool(read_only)]
async fn failing_job() -> Result<String, Intentional> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(Intentional::Always)
}

/// Panics after a moment: a failure of the server's own (conformance: tasks-lifecycle).
#[mcp_tool(read_only)]
async fn protocol_error_job() -> String {
    tokio::time::sleep(Duration::from_millis(500)).await;
    panic!("protocol_error_job fails on purpose")
}

/// Asks the user to confirm, inside a task (conformance: tasks-mrtr-input).
#[mcp_tool(destructive)]
async fn confirm_delete(
    #[call] call: &Call,
    /// The file to delete.
    filename: Option<String>,
) -> Result<String, ClientRequestError> {
    let form = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]
    });
    let filename = filename.unwrap_or_else(|| "the item".to_owned());
    let answer = call.elicit(&format!("Delete {filename}?"), form).await?;
    Ok(format!(
        "confirm_delete {filename}: action={}",
        answer.action.as_str()
    ))
}

/// Asks two questions at once, inside a task (conformance: tasks-mrtr-input).
#[mcp_tool(read_only)]
async fn multi_input(#[call] call: &Call) -> Result<String, ClientRequestError> {
    let (first, second) = tokio::join!(
        call.ask("first")
            .elicit("First value?", one_string_form("value")),
        call.ask("second")
            .elicit("Second value?", one_string_form("value")),
    );
    Ok(format!(
        "{} and {}",
        first?.content["value"], second?.content["value"]
    ))
}

/// Asks for a name in rounds, then continues as a task (conformance: tasks-mrtr-composition).
#[mcp_tool(read_only)]
async fn test_tool_with_task(#[call] call: &Call) -> Result<String, ClientRequestError> {
    let name = ask_name(call, true).await?;
    call.continue_as_task().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(format!("Hello, {name}! (from a task)"))
}

/// A tool listed with an input schema of its own.
struct WithSchema<T>(T, fn() -> serde_json::Value);

impl<C: Send + Sync + 'static, T: Tool<C>> Tool<C> for WithSchema<T> {
    fn definition(&self) -> fusion_runtime::tool::ToolDefinition<C> {
        self.0.definition().with_input_schema((self.1)())
    }
}

/// The schema the json-schema-2020-12 scenario lists.
fn json_schema_2020_12() -> serde_json::Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// The schema of `test_header_param`: `region` mirrored in the `Mcp-Param-Region` header.
fn header_param_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"region": {"type": "string", "description": "The region.", "x-mcp-header": "Region"}},
        "required": ["region"],
        "additionalProperties": false
    })
}

/// The conformance server: every fixture the suite calls.
fn server() -> fusion_runtime::ServerBuilder {
    let with_arguments = PromptInfo::new(
        "test_prompt_with_arguments",
        "A prompt with two required arguments",
    )
    .arg(PromptArg::required("arg1", "First test argument").choices(["paris", "park", "party"]))
    .required("arg2", "Second test argument");
    let with_resource = PromptInfo::new(
        "test_prompt_with_embedded_resource",
        "A prompt that embeds a resource",
    )
    .required("resourceUri", "URI of the resource to embed");
    Server::builder("fusion-conformance", env!("CARGO_PKG_VERSION"))
        // The json-schema-2020-12 tool's `$defs` are listed as written.
        .keep_schema_refs(true)
        .tool(test_simple_text)
        .tool(test_image_content)
        .tool(test_audio_content)
        .tool(test_embedded_resource)
        .tool(test_multiple_content_types)
        .tool(test_tool_with_logging)
        .tool(test_error_handling)
        .tool(test_tool_with_progress)
        .tool(test_sampling)
        .tool(test_elicitation)
        .tool(test_elicitation_sep1034_defaults)
        .tool(test_elicitation_sep1330_enums)
        .tool(test_input_required_result_elicitation)
        .tool(test_input_required_result_sampling)
        .tool(test_input_required_result_list_roots)
        .tool(test_input_required_result_request_state)
        .tool(test_input_required_result_multiple_inputs)
        .tool(test_input_required_result_multi_round)
        .tool(test_input_required_result_tampered_state)
        .tool(test_input_required_result_capabilities)
        .tool(test_missing_capability)
        .tool(test_streaming_elicitation)
        .tool(test_logging_tool)
        .tool(test_trigger_tool_change)
        .tool(test_reconnection)
        .tool(WithSchema(json_schema_2020_12_tool, json_schema_2020_12))
        .tool(WithSchema(test_header_param, header_param_schema))
        .tool(greet)
        .task_tool(slow_compute, Tasking::optional())
        .task_tool(failing_job, Tasking::required())
        .task_tool(protocol_error_job, Tasking::optional())
        .task_tool(confirm_delete, Tasking::optional())
        .task_tool(multi_input, Tasking::optional())
        .task_tool(test_tool_with_task, Tasking::required().started_by_tool())
        .resource_with(
            fusion_runtime::resource::ResourceInfo::new("test://static-text", "static-text")
                .description("A static text resource")
                .mime_type("text/plain"),
            || async { "This is the content of the static text resource." },
        )
        .resource_with(
            fusion_runtime::resource::ResourceInfo::new("test://static-binary", "static-binary")
                .description("A static binary resource (a PNG image)")
                .mime_type("image/png"),
            || async { RED_PIXEL_PNG.to_vec() },
        )
        .resource_with(
            fusion_runtime::resource::ResourceInfo::new(
                "test://watched-resource",
                "watched-resource",
            )
            .description("A resource clients may subscribe to")
            .mime_type("text/plain"),
            || async { "This resource is watched for changes." },
        )
        .resource_template_with(
            fusion_runtime::resource::ResourceInfo::new(
                "test://template/{id}/data",
                "template-data",
            )
            .description("Data for an id, from a URI template")
            .mime_type("application/json"),
            |vars: HashMap<String, String>| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                ResourceContent::json(&json!({
                    "id": id,
                    "templateTest": true,
                    "data": format!("Data for ID: {id}"),
                }))
            },
        )
        .prompt(
            PromptInfo::new("test_simple_prompt", "A simple prompt without arguments"),
            |()| async { "This is a simple prompt for testing." },
        )
        .prompt(with_arguments, |args: HashMap<String, String>| async move {
            let arg = |name: &str| args.get(name).cloned().unwrap_or_default();
            format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )
        })
        .prompt(with_resource, |args: HashMap<String, String>| async move {
            let uri = args.get("resourceUri").cloned().unwrap_or_default();
            vec![
                prompt::user_block(resource::embedded_text(
                    &uri,
                    "text/plain",
                    "Embedded resource content for testing.",
                )),
                prompt::user("Please process the embedded resource above."),
            ]
        })
        .prompt(
            PromptInfo::new("test_prompt_with_image", "A prompt with an image"),
            |()| async {
                vec![
                    prompt::user_block(resource::image(&RED_PIXEL_PNG, "image/png")),
                    prompt::user("Please analyze the image above."),
                ]
            },
        )
        .prompt_with_call(
            PromptInfo::new(
                "test_input_required_result_prompt",
                "A prompt that asks the user for its context first",
            ),
            |(), call: Call| async move {
                let answer = call
                    .ask("user_context")
                    .elicit(
                        "What context should the prompt use?",
                        one_string_form("context"),
                    )
                    .await?;
                let context = answer.content["context"].as_str().unwrap_or("none given");
                Ok::<_, ClientRequestError>(prompt::user(format!("Use this context: {context}.")))
            },
        )
}

/// How the fixtures are served: over Streamable HTTP with these options, or over stdio.
enum Serve {
    Http(Box<HttpOptions>),
    Stdio,
}

/// `--port N` (default 8931), `--stateless`, `--session-prefix P` (a replica's session
/// ids start with `P`, for a proxy that routes sessions by it), `--stdio`.
fn options() -> Result<Serve, String> {
    let mut stdio = false;
    let mut port = 8931_u16;
    let mut stateless = false;
    let mut session_prefix = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a value")?;
                port = value
                    .parse()
                    .map_err(|_| format!("--port must be a port number, not {value:?}"))?;
            }
            "--stateless" => stateless = true,
            "--stdio" => stdio = true,
            "--session-prefix" => {
                session_prefix = Some(args.next().ok_or("--session-prefix needs a value")?);
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?} (use --port N, --stateless, --session-prefix P, --stdio)"
                ));
            }
        }
    }
    if stdio {
        return Ok(Serve::Stdio);
    }
    let options = HttpOptions::default().port(port).stateless(stateless);
    Ok(Serve::Http(Box::new(match session_prefix {
        Some(prefix) => options.session_prefix(prefix),
        None => options,
    })))
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "conformance",
    about: "the MCP conformance suite's fixtures over Streamable HTTP",
    flags: &[
        (
            "--port",
            "PORT",
            "serve on 127.0.0.1:PORT (default 8931; 0: a free port, printed on stderr)",
        ),
        ("--stateless", "", "serve without sessions"),
        (
            "--session-prefix",
            "P",
            "start session ids with P (for a proxy that routes sessions by it)",
        ),
        ("--stdio", "", "serve over stdin/stdout instead"),
    ],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    match options() {
        Ok(Serve::Http(options)) => server().serve_http_with(*options).await,
        Ok(Serve::Stdio) => server().serve_stdio().await,
        Err(message) => {
            eprintln!("conformance: {message}");
            ExitCode::from(fusion_runtime::exit::EXIT_CONFIG)
        }
    }
}
