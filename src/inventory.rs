//! An inventory service whose tools declare constraints on their arguments: ranges,
//! lengths, patterns, formats, literal lists, unique items, constraints on each item,
//! defaults, custom checks and nested structures. It is what `examples/inventory.rs` serves and what the validation
//! tests call.

use fusion_runtime::{Server, prelude::*};

/// How to order results.
#[mcp_type]
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    /// Cheapest first.
    PriceAsc,
    /// Most expensive first.
    PriceDesc,
    /// By name.
    Name,
}

/// A filter on one attribute.
#[mcp_type]
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// The attribute, in snake case.
    #[arg(pattern = "^[a-z][a-z_]*$", length(max = 32))]
    pub field: String,
    /// The value it must have.
    #[arg(non_empty)]
    pub value: String,
    /// How many matches to keep for this filter.
    #[arg(min = 1, max = 100, default = 10)]
    pub limit: u32,
}

/// A postal address.
#[mcp_type]
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// Street and number.
    #[arg(length(min = 3, max = 120))]
    pub street: String,
    /// A two-letter country code.
    #[arg(pattern = "^[A-Z]{2}$")]
    pub country: String,
}

/// A product as returned by the tools.
#[mcp_type]
#[derive(Debug, Serialize, JsonSchema)]
pub struct Product {
    /// Stock-keeping unit.
    pub sku: String,
    /// Price in cents.
    pub price_cents: u64,
}

/// Search products.
#[mcp_tool(read_only)]
pub async fn search_products(
    /// Free text, 1 to 80 characters.
    #[arg(length(min = 1, max = 80))]
    query: String,
    /// How many results, 1 to 50.
    #[arg(min = 1, max = 50, default = 10)]
    take: u8,
    /// Lowest price in euros, not negative.
    #[arg(min = 0.0)]
    min_price: Option<f64>,
    /// Tags that must all match, at most 5, no repeats; each 1 to 16 of `a-z`, `0-9`, `-`.
    #[arg(
        unique,
        length(max = 5),
        items(length(min = 1, max = 16), pattern = "^[a-z0-9-]+$")
    )]
    tags: Option<Vec<String>>,
    /// The order of results.
    sort: Option<Sort>,
    /// Attribute filters.
    filters: Option<Vec<Filter>>,
    /// Only products in stock.
    in_stock_only: Option<bool>,
) -> Vec<Product> {
    let _ = (query, min_price, tags, sort, filters, in_stock_only);
    (0..u64::from(take.min(3)))
        .map(|index| Product {
            sku: format!("SKU-{index:04}"),
            price_cents: 999 + index,
        })
        .collect()
}

/// Rejects the reserved SKU prefix.
fn not_reserved(sku: &str) -> Result<(), String> {
    if sku.starts_with("SKU-0000") {
        Err("SKU-0000 is reserved for tests; use another SKU".into())
    } else {
        Ok(())
    }
}

/// Create a product.
#[mcp_tool(destructive)]
pub async fn create_product(
    /// The SKU: `SKU-` and four to eight digits.
    #[arg(pattern = "^SKU-[0-9]{4,8}$", validate = not_reserved)]
    sku: String,
    /// The price in cents, in steps of 5, more than 0.
    #[arg(exclusive_min = 0, multiple_of = 5, max = 1_000_000)]
    price_cents: u64,
    /// The product's name.
    #[arg(non_empty, length(max = 60))]
    name: String,
    /// Stock level, from -10 (backorder) to 10,000.
    #[arg(min = -10, max = 10_000)]
    stock: i32,
    /// The availability date.
    #[arg(format = "date")]
    available_from: Option<String>,
    /// Where it ships from.
    warehouse: Option<Address>,
    /// The currency.
    #[arg(one_of = ["EUR", "USD", "GBP"], default = "EUR".to_owned())]
    currency: String,
    /// A discount ratio, greater than 0 and less than 1.
    #[arg(exclusive_min = 0.0, exclusive_max = 1.0)]
    discount: Option<f64>,
) -> Product {
    let _ = (name, stock, available_from, warehouse, currency, discount);
    Product { sku, price_cents }
}

/// Contact the supplier of a product.
#[mcp_tool(open_world)]
pub async fn contact_supplier(
    /// The supplier's email address.
    #[arg(format = "email")]
    email: String,
    /// Their website.
    #[arg(format = "uri")]
    website: Option<String>,
    /// The order this is about.
    #[arg(format = "uuid")]
    order_id: String,
    /// When to call back.
    #[arg(format = "date-time")]
    callback_at: Option<String>,
    /// The supplier's API host.
    #[arg(format = "ipv4")]
    host_v4: Option<String>,
    /// The supplier's API host over IPv6.
    #[arg(format = "ipv6")]
    host_v6: Option<String>,
    /// Old name of `email`.
    #[arg(deprecated)]
    mail: Option<String>,
) -> String {
    let _ = (website, order_id, callback_at, host_v4, host_v6, mail);
    format!("message queued for {email}")
}

// Its two addresses share one type, which `tools/list` spells once under `$defs`
// (`ServerBuilder::hoist_shared_schemas`).
/// Move stock from one warehouse to another.
#[mcp_tool(destructive)]
pub async fn transfer_stock(
    /// The SKU to move.
    #[arg(pattern = "^SKU-[0-9]{4,8}$")]
    sku: String,
    /// How many units, 1 to 10,000.
    #[arg(min = 1, max = 10_000)]
    units: u32,
    /// The warehouse it leaves.
    from: Address,
    /// The warehouse it goes to.
    to: Address,
) -> String {
    format!(
        "{units} of {sku} on their way from {} to {}",
        from.street, to.street
    )
}

/// The inventory server: every tool above.
pub fn server() -> Server {
    builder().build()
}

/// The inventory server's builder, for a test to add its own options.
pub fn builder() -> fusion_runtime::ServerBuilder {
    Server::builder("inventory", env!("CARGO_PKG_VERSION"))
        .tool(search_products)
        .tool(create_product)
        .tool(contact_supplier)
        .tool(transfer_stock)
}
