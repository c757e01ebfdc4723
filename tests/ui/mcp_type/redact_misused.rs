use fusion_runtime::prelude::*;

// `#[redact]` on a type that is never serialized, with an argument, and beside a
// `serialize_with` of the user's: one error each.
#[mcp_type]
#[derive(Deserialize, JsonSchema)]
struct Login {
    #[redact]
    password: String,
}

#[mcp_type]
#[derive(Serialize, JsonSchema)]
struct Profile {
    #[redact(mask = "***")]
    email: String,
    #[redact]
    #[serde(serialize_with = "shout")]
    name: String,
}

fn shout<S: serde::Serializer>(name: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&name.to_uppercase())
}

fn main() {
    let _ = Login { password: String::new() }.password;
    let _ = Profile { email: String::new(), name: String::new() };
}
