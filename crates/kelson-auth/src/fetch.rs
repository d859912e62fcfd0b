//! Fetching the authorization server's documents: bounded in time and size, never following
//! redirects.

use serde::de::DeserializeOwned;

use crate::config::AuthConfig;
use crate::error::{Error, FetchError};

/// An HTTP client for the authorization server.
#[derive(Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    max_document: usize,
}

impl Fetcher {
    pub(crate) fn new(config: &AuthConfig) -> Result<Self, Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.fetch_timeout)
            // A redirect could send the client credentials of introspection elsewhere; the
            // documents we read are at fixed, configured or discovered addresses.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(Error::Client)?;
        Ok(Fetcher {
            client,
            max_document: config.max_document,
        })
    }

    /// GETs a JSON document.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, FetchError> {
        let response = self
            .client
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(FetchError::Http)?;
        self.read_json(response).await
    }

    /// POSTs a form with HTTP Basic client authentication and reads a JSON answer.
    pub(crate) async fn post_form_json<T: DeserializeOwned>(
        &self,
        url: &str,
        user: &str,
        password: &str,
        form: &[(&str, &str)],
    ) -> Result<T, FetchError> {
        // RFC 6749 §2.3.1: the client id and secret are form-urlencoded before Basic encoding.
        let user = url::form_urlencoded::byte_serialize(user.as_bytes()).collect::<String>();
        let password =
            url::form_urlencoded::byte_serialize(password.as_bytes()).collect::<String>();
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = self
            .client
            .post(url)
            .basic_auth(user, Some(password))
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(FetchError::Http)?;
        self.read_json(response).await
    }

    async fn read_json<T: DeserializeOwned>(
        &self,
        mut response: reqwest::Response,
    ) -> Result<T, FetchError> {
        if response.status() != reqwest::StatusCode::OK {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|n| n > self.max_document as u64)
        {
            return Err(FetchError::TooLarge(self.max_document));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(FetchError::Http)? {
            if body.len() + chunk.len() > self.max_document {
                return Err(FetchError::TooLarge(self.max_document));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(FetchError::Json)
    }
}
