use fusion_runtime::Classify;

#[derive(Classify)]
union Bits {
    a: u32,
    b: f32,
}

fn main() {}
