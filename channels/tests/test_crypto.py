"""WeCom's callback crypto against the platform's published sample vectors (the official
WXBizMsgCrypt sample: its token, EncodingAESKey, corp id and the requests it shows)."""
import pytest

from channels.crypto import CryptoError, WeComCrypto, signature

TOKEN = "hJqcu3uJ9Tn2gXPmxx2w9kkCkCE2EPYo"
AES_KEY = "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt"
CORP_ID = "ww1436e0e65a779aee"
VERIFY = {"msg_signature": "012bc692d0a58dd4b10f8dfe5c4ac00ae211ebeb", "timestamp": "1476416373", "nonce": "47744683",
          "echostr": "fsi1xnbH4yQh0+PJxcOdhhK6TDXkjMyhEPA7xB2TGz6b+g7xyAbEkRxN/3cNXW9qdqjnoVzEtpbhnFyq6SVHyA=="}
MESSAGE = {"msg_signature": "0c3914025cb4b4d68103f6bfc8db550f79dcf48e", "timestamp": "1476422779", "nonce": "1597212914",
           "encrypt": "Kl7kjoSf6DMD1zh7rtrHjFaDapSCkaOnwu3bqLc5tAybhhMl9pFeK8NslNPVdMwmBQTNoW4mY7AIjeLvEl3NyeTkAgGzBhzTtRLNshw2AEew+"
                      "kkYcD+Fq72Kt00fT0WnN87hGrW8SqGc+NcT3mu87Ha3dz1pSDi6GaUA6A0sqfde0VJPQbZ9U+3JWcoD4Z5jaU0y9GSh010wsHF8KZD24Yhm"
                      "ZH4ch4Ka7ilEbjbfvhKkNL65HHL0J6EYJIZUC2pFrdkJ7MhmEbU2qARR4iQHE7wy24qy0cRX3Mfp6iELcDNfSsPGjUQVDGxQDCWjayJOpcw"
                      "ocugux082f49HKYg84EpHSGXAyh+/oxwaWbvL6aSDPOYuPDGOCI8jmnKiypE+"}


def test_the_published_url_verification_sample():
    crypto = WeComCrypto(TOKEN, AES_KEY, CORP_ID)
    echo = crypto.verify_and_decrypt(VERIFY["msg_signature"], VERIFY["timestamp"], VERIFY["nonce"], VERIFY["echostr"])
    assert echo == "1288432023552776189"  # the random number WeCom sent, answered back to pass verification


def test_the_published_message_sample():
    crypto = WeComCrypto(TOKEN, AES_KEY, CORP_ID)
    xml = crypto.verify_and_decrypt(MESSAGE["msg_signature"], MESSAGE["timestamp"], MESSAGE["nonce"], MESSAGE["encrypt"])
    assert xml == ("<xml><ToUserName>ww1436e0e65a779aee</ToUserName><FromUserName>ChenJiaShun</FromUserName><CreateTime>1476422779"
                   "</CreateTime><MsgType>text</MsgType><Content>你好</Content><MsgId>1456453720</MsgId><AgentID>1000002</AgentID></xml>")


def test_what_we_encrypt_the_published_decryption_reads_back():
    crypto = WeComCrypto(TOKEN, AES_KEY, CORP_ID)
    sealed = crypto.encrypt("<xml><Content><![CDATA[你好]]></Content></xml>")
    assert crypto.verify_and_decrypt(signature(TOKEN, "1", "2", sealed), "1", "2", sealed) == "<xml><Content><![CDATA[你好]]></Content></xml>"


@pytest.mark.parametrize("change", ["signature", "corp", "ciphertext", "key"])
def test_anything_tampered_is_refused(change):
    sig, ts, nonce, enc = MESSAGE["msg_signature"], MESSAGE["timestamp"], MESSAGE["nonce"], MESSAGE["encrypt"]
    corp, key = CORP_ID, AES_KEY
    if change == "signature":
        sig = "0" * 40
    elif change == "corp":
        corp = "ww0000000000000000"
    elif change == "ciphertext":  # re-signed: the decryption itself must refuse it
        enc = enc[:-24] + "AAAAAAAAAAAAAAAAAAAAAAA="
        sig = signature(TOKEN, ts, nonce, enc)
    elif change == "key":
        with pytest.raises(CryptoError):
            WeComCrypto(TOKEN, key[:-1], corp)
        key = "a" * 43  # a well-formed key that is not this corp's
        sig = signature(TOKEN, ts, nonce, enc)
    with pytest.raises(CryptoError):
        WeComCrypto(TOKEN, key, corp).verify_and_decrypt(sig, ts, nonce, enc)
