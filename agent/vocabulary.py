"""The one table of intent and tool signals, read by the router and by data_guard.

Each entry is a named sentence pattern with a weight, the intent it speaks for and, for a
data signal, the query tool it points to. The router adds the weights per intent; the data
planner adds the weights per tool. Both name the entries that matched in their reason, so a
decision can always be traced back to a row of this table. Nothing here touches the database.

Signals are counted by occurrence (findall): 「热销排行前五」 has three ranking words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.urls import reverse_lazy
from django.utils.text import format_lazy

POLICY, DATA, BOTH, ACTION, OUT_OF_SCOPE = "policy", "data", "both", "action", "out_of_scope"
STORE_SALES, TOP_PRODUCTS, COMPARE_STORES, HOURLY_PEAK, LOW_STOCK, MEMBER_BALANCE, DAILY_TREND, PRODUCT_SALES, PRODUCT_STOCK = (
    "store_sales", "top_products", "compare_stores", "hourly_peak", "low_stock", "member_balance", "daily_trend", "product_sales",
    "product_stock")
CHANNEL_SALES, PERIOD_COMPARE, PRODUCT_DAILY = "channel_sales", "period_compare", "product_daily"
STOCK_TOOLS = (LOW_STOCK, PRODUCT_STOCK)  # answers whose rows below safety stock offer a restock
PRODUCT_TOOLS = (PRODUCT_STOCK, PRODUCT_SALES, PRODUCT_DAILY)  # answers about one product (a restock after one is for it)
# Two periods compared (「上周跟上上周比」「11月1号到7号和8号到14号哪个多」), or one against the one
# before it (「本月环比」「上周涨了还是跌了」).
PERIOD_CHANGE = re.compile(r"涨|跌|增长|下降|变化|环比|同比|哪个[^，。？！]{0,4}(多|高|好)|哪段|相比|对比|比起|比较|(跟|和|与)[^，。？！]{0,12}比|比上|"
                           r"比[^，。？！]{1,8}(多|少|好|差|怎么样|如何|咋样)")
# Two periods named with a word about the figures (「上周比上上周卖得多吗」「这周跟上周比怎么样」) ask for
# the figures compared even without a sales word; 「上周和上上周的排班有什么不同」 does not.
FIGURE_COMPARE = re.compile(r"卖|生意|营业额|销售|流水|业绩|订单|多少单|几单|单量|客流|多还是少|多吗|少吗|好吗|差吗|涨|跌|哪个[^，。？！]{0,4}(多|高|好)|"
                            r"比$|比呢|比一下|比比|比[^，。？！]{0,2}(怎么样|如何|咋样)|对比|比较")
# Two named stores set side by side (「天河跟福田比」「福田店和天河店上个月对比」): a comparison of
# their figures even without a word for the figures; the planner asks for the period if none.
STORES_COMPARED = re.compile(r"(跟|和|与|同)[^，。？！]{0,12}(比|PK)|对比|比较|比一比|比一下|比比|PK|"
                             r"比[^，。？！]{0,8}(多|少|好|差|高|低|怎么样|如何|咋样)", re.IGNORECASE)
CHANGE_FROM_BEFORE = re.compile(r"涨|跌|增长|下降|变化|环比|比上|比之前|比前(?![天日])")  # 「比前天」 names a day
# A sales question about one channel or about refunds (「上周外卖卖了多少」「昨天退款了几单」) is asked
# per channel: the store's paid total would silently drop the filter.
CHANNEL_WORDS = re.compile(r"外卖|堂食|团购|渠道|退款|退了|退单|美团|饿了么|抖音|大众点评")
SHARE = re.compile(r"占比|占多少|占几成|比例|比重")
# Each store on its own (「各店卖得最好的」), not the stores together or ranked; 各自 only with the stores
# named (「天河和福田各自的热销」): 「啤酒和红酒各自」 is about products.
EACH_STORE_WORDS = r"各店|各门店|各个门店|各家店?|每家店?|每个店|每个门店"
EACH_STORE = re.compile(EACH_STORE_WORDS)
# A short question set against the figure just given (「比上上个月涨了还是跌了」「跟上上周比呢」).
AGAINST_THE_NAMED = re.compile(r"\s*(比|跟|和|与)")
# A question about the figures or the person they were about, right after them (「他能打印出来给他吗」
# after a member's balance): not 「为什么客人喝多了不能再卖酒」, a rule question of its own.
ABOUT_THE_FIGURES = re.compile(r"^(他|她|对方|这个数|这些数|这笔|这个钱|这钱)")
ACROSS_STORES = re.compile(r"各店|各门店|各家|哪(家|间|个门店|个店|个分店)|每家|四家|所有店|所有门店|排名|排行")
# When two tools score the same, the more specific one wins.
# 「上周哪天最忙」 asks for a day (daily trend), 「几点最忙」 for an hour: the day wins a tie.
TOOL_PRIORITY = (MEMBER_BALANCE, LOW_STOCK, DAILY_TREND, HOURLY_PEAK, COMPARE_STORES, TOP_PRODUCTS, STORE_SALES)
N = r"[0-9一二两三四五六七八九十]+"
# 「百威」「那百威呢」「科罗娜怎么样」: nothing but a product's name. Which figure, or which rule, is
# open; the answer asks instead of refusing it as a gap in the SOPs (or answering 「科罗娜怎么样」
# from the 沽清 rule, the closest section).
BARE_NAME = re.compile(r"^(那么?|那个|还有)?\s*(?P<what>.+?)\s*(呢|怎么样|咋样|如何)?[\s？?。！!]*$")
# 「帮我登记一下客人的投诉」「开个工单」: the router's ticket request, and the slots' choice of a ticket
# over a restock (「登记客人的投诉」 was asked 「要补哪个商品？」: the two patterns differed). 「登记了」 is done.
TICKET_REQUEST = (r"(帮我|给我|请|麻烦)?[^，。？！]{0,4}(创建|登记|提交|建|开|提(?!交))(?![了过完好])(一?个|一?张|一下)?[^，。？！]{0,4}"
                  r"(工单|投诉单|客诉单|(客诉|投诉)(?!怎|要|流程|规定|电话))")
# 「客人说吃了拉肚子 帮我建个单」「客人投诉菜里有头发，帮我登记一下」: a guest's complaint, then a
# request to file it that names no 工单 (only 「投诉工单」 worked). The request ends the message.
FILE_IT = r"[，,。\s]*(帮我|给我|请|麻烦|替我)(建|开|提|登记|记)(一?个|一?张|一下)?单?\s*[。！!]?\s*$"
FILE_A_COMPLAINT = (r"(客人|顾客|客户|那桌|[0-9一二三四五六七八九十]+号桌)[^？?]{0,6}(说|反映|反应|投诉|嫌|抱怨|吐槽)[^？?]{1,60}?"
                    + FILE_IT)
# A question about every store, or about which one: a one-store asker is told what they can see.
WHICH_STORE = re.compile(r"哪(家|个|间)(门)?店|哪家")
ALL_STORES_ASKED = re.compile(r"各店|各门店|各家|每家|[两三四五六七八九几]家店|所有(门)?店|全部(门)?店|全部门店|每个店|全公司|整个公司|全品牌|全国|总共几家")
# After 「前 N」: a unit of time makes it a period (「前一周」「前10天」「前十五天」), not a top-N ranking.
# The lookahead also refuses a further digit, so 「前10天」 cannot match as 「前1」.
NOT_A_PERIOD = r"(?![0-9一二两三四五六七八九十百]|\s*个?(?:周|星期|礼拜|天|日|月|年|季度|小时))"
COUNTED_SALES = "卖了几件"  # a count of something sold: with a product named, that product's sales


@dataclass(frozen=True)
class Signal:
    name: str  # what the reason shows
    intent: str
    pattern: str
    weight: int
    tool: str | None = None
    topic: bool = False  # a policy topic word: it alone never makes a question a rule question
    frame: bool = False  # a generic question frame (能不能, 怎么办 …): it says *that* something is asked, not what about

    @property
    def regex(self) -> re.Pattern:
        return _compiled(self.pattern)


_CACHE: dict[str, re.Pattern] = {}


def _compiled(pattern: str) -> re.Pattern:
    if pattern not in _CACHE:
        _CACHE[pattern] = re.compile(pattern, re.IGNORECASE)
    return _CACHE[pattern]


SIGNALS: tuple[Signal, ...] = (
    # --- action: a request to write something (it becomes a proposal) --------------------------
    # 「帮我…」 or for a store: 「帮天河店补两箱青岛」「给福田店补…」.
    Signal("请求补货", ACTION, r"(帮我|给我|请|麻烦|替我|(?:帮|给|替)[^，。？！]{1,8}?店(?![^，。？！]{0,6}[补进订]了))[^，。？！]{0,12}(补|订|进|下单|申请|加)[^，。？！]{0,6}\d*\s*[零〇一二两三四五六七八九十百千万\d]*\s*(箱|瓶|件|桶|份)", 3),
    Signal("申请补货", ACTION, r"(帮我|给我|请|麻烦|替我|(?:帮|给|替)[^，。？！]{1,8}?店(?![^，。？！]{0,6}[补进订]了))[^，。？！]{0,12}(补货|申请补货|提交补货|下补货单|补一下货)|"
           r"(帮我|给我|请|麻烦|替我|(?:帮|给|替)[^，。？！]{1,8}?店(?![^，。？！]{0,6}[补进订]了))[^，。？！]{0,6}(补|订|进)(点|些|一点|一些|一下)儿?", 3),
    # 「那百威也补一下」「青岛也再补点」 right after a restock: another product, the same request (it was
    # answered from the rules, and the 「5箱」 that followed as unrelated to the store).
    Signal("也补一下", ACTION, r"^(?![^\n]*(吗|嘛|么|呢|要不要|是不是|该不该|用不用|需不需要|[?？]))\s*(那|那个|还有)?[^，。？！\d\s]{1,10}?(也|再|一起)(帮我)?补(一下|点|些|一点|一些)(货)?\s*(吧|呗)?\s*[。！!]?\s*$", 3),
    # A clause that is the order (「补货：可口可乐 24 瓶」「补货科罗娜48瓶」「青岛补两箱」「下单两箱可乐」
    # 「青岛啤酒要补货，补20箱」「青岛啤酒补5箱，帮我提一下」), in a message that asks nothing
    # (「补货48瓶够不够」「补货的时候写6瓶」).
    Signal("补货指令", ACTION, r"^(?![^\n]*(吗|嘛|么|呢|够|多少|几|怎|谁|哪|是不是|要不要|行不行|时候|的话|如果|为什么|为啥|[?？]|"
           r"已经|刚|[补进订下]了|昨天|前天|上周|上个?月|去年|预订|预定|[给帮替](客人|顾客|他|她|这桌|那桌)))"
           r"(?:[^\n]*[，,。；;！!\s])?\s*(?:"
           r"(申请)?(补货?|下单|订货?|进货?)[：:，,\s]*[^，,。；;？！\d]{1,12}?\s*[零〇一二两三四五六七八九十百千万\d]+\s*(箱|瓶|件|桶|份|杯)|[^，,。；;？！\d]{1,12}?(补货?|下单|订货?|进货?)\s*[零〇一二两三四五六七八九十百千万\d]+\s*(箱|瓶|件|桶|份|杯)|"
           # 「给福田补两箱科罗娜」「帮天河店补3箱百威」: for a store, the quantity before the product;
           # 「再补10瓶黑牌」: once more
           r"(?:(?:帮我|请|麻烦)?[给帮替][^，,。；;？！\d\s]{1,6}?)?(?:再|还要|另外|多)?"
           r"(申请)?(补货?|下单|订货?|进货?)\s*[零〇一二两三四五六七八九十百千万\d]+\s*(箱|瓶|件|桶|份|杯)[^，,。；;？！\d]{0,12})\s*[。！!]?\s*"
           r"([，,]\s*(帮我|麻烦|请)?(提|申请|下|弄|报|交)一?下(单)?\s*[。！!]?)?\s*$", 3),
    # The whole message asks for a restock and names nothing yet (「我要补货」「申请补货」): the conversation
    # asks for the product and the quantity. (「补科罗娜」: the router checks the name against the product list.)
    # 「帮我补吧」「那就都补上」「再补一次」: the same, said with 补 alone (it was answered from the rule on
    # 补卡, the missed clock-in).
    Signal("要补货", ACTION, r"^\s*(那|那就|就)?(你)?(我要|我想|要|想|帮忙|帮我|给我|麻烦|替我|请)?(再|都|全都|全部|一起)?(申请)?"
           r"(补货|补上|补一下货?|补点货?|补)(货|上|一下|一次)?\s*(吧|呗|啊|呀|去吧)?\s*[。！!]?\s*$", 3),
    Signal("请求建工单", ACTION, TICKET_REQUEST, 3),
    Signal("客诉请求登记", ACTION, FILE_A_COMPLAINT, 3),

    # --- data: each points to the tool that answers it ------------------------------------------
    Signal("营业额", DATA, r"卖了多少|卖得?多少钱|买了多少|卖[得的]?(怎么样|如何|咋样|好不好|还行吗)|生意(怎么样|如何|咋样|好不好|好吗)|营业额|销售额|营收|流水|业绩|"
           r"(外卖|堂食|团购|渠道|门店|店里?|全部门店)收入|收入(多少|是多少|怎么样)", 2, STORE_SALES),
    # 「上周退款多少」「天河店上周退款多少钱」: the refunds' figures (data_guard asks channel_sales); 「退款多少钱
    # 以内值班主管能批」 stays a rule question (no store, a rule word).
    Signal("退款数", DATA, r"退款[^，。？！]{0,3}(多少(?!钱?(以内|以上|以下|之内|内|要|需|得|谁|的话))|几单|几笔|总额|情况|率|比例|占比)|退了(多少|几)", 2, STORE_SALES),
    Signal("销量", DATA, r"销量", 1, STORE_SALES),
    # 「上周外卖占多少」「外卖占比」: a channel's share of the sales (data_guard: channel_sales); 「外卖占多少」
    # was answered with the delivery-range rule.
    Signal("渠道占比", DATA, r"(外卖|堂食|团购|美团|饿了么|抖音)[^，。？！]{0,4}(占比|占多少|占几成|比例|比重)", 2, STORE_SALES),
    # 「…涨了还是跌了」「本月环比」「11月1号到7号和8号到14号哪个多」: a change in the figures (data_guard
    # compares the periods the question names, or one with the one before it).
    Signal("涨跌", DATA, r"涨了还是跌了|涨还是跌|是涨是跌|环比|同比|(增长|下降|涨|跌)了(多少|几)|比[^，。？！]{1,8}(多|少)了?(多少|几)|哪(个|段)[^，。？！]{0,3}(多(?!少)|高)", 2, STORE_SALES),
    # How many were sold (「科罗娜卖了几瓶」「卖出去多少杯」); 「一瓶能卖几杯」 (no 了/出/掉) is a rule.
    # With a product named, data_guard asks product_sales instead of the store's revenue.
    Signal(COUNTED_SALES, DATA, rf"卖(了|出了?|掉了?|出去了?)\s*(多少|几|{N})\s*(瓶|杯|份|箱|桶|扎|支|罐|打)|卖(出|掉)(去)?了?多少", 2, STORE_SALES),
    # 「单子」 is also a work order, a handover sheet, a receipt: an order count only with a quantity.
    Signal("订单指标", DATA, r"客单价|订单数|(?<!免)多少单|(?<!免)几单|单量|单子[^，。？！太]{0,3}(最?多(?!久)|少|几|爆|量|怎么样|咋样|如何|情况)|成交|客流|来客数?|进店人数", 2, STORE_SALES),
    Signal("商品排行", DATA, rf"排行|热[销消卖]|畅销|好卖|人气最高|最火|前\s*{N}{NOT_A_PERIOD}\s*(名|个|款|样|位)?|top\s*\d+|榜|第一名?的是", 2, TOP_PRODUCTS),
    Signal("卖得最好", DATA, r"(卖|销量)[得的]?最(好|多|火)|(卖|销|销量)[得的]?好的?|什么卖得|啥卖得|卖了?哪些[^，。？！]{0,4}最多|哪些[^，。？！]{0,4}卖得?最多", 2, TOP_PRODUCTS),
    # 「找哪家做」「哪家买」「附近哪家诊所」 ask for a vendor or a place, not for one of our stores
    # (「哪家做得最好」「哪家订单最多」「哪家定的包厢最多」 still compare stores).
    Signal("哪家店", DATA, r"(?<![找用近])哪(家|间)(?!做(?!得)|买|订(?!单|的)|定(?!的)|来修|修|装|供|医院|诊所|公司|厂|银行|快递|的快递|蛋糕)|"
           r"哪(个门店|个店|个分店)|那(家|间)店?[^，。？！]{0,6}最(好|多|高)|谁卖得|谁的?(营业额|业绩|生意)|比谁|谁(卖得)?(多|高)|"
           r"谁的?(客单价|订单数?|单量|客流)[^，。？！]{0,3}(最|高|多|低|少)", 3, COMPARE_STORES),
    Signal("门店排名", DATA, r"排第几|排在第几|排名(?!前)|排个名|(门店|各店|店)[^，。？！]{0,6}(排行|排名)(?!前)|(营业额|业绩|流水|销售额|订单数|单量)(排行|排名)", 3, COMPARE_STORES),
    # 「比较」 compares only with something to compare to; 「比较严重的投诉」 is an adverb.
    Signal("门店对比", DATA, r"对比|比一比|占比|最赚钱|比较(一下|下|看看)|比较[^，。？！]{0,10}(和|跟|与|哪|谁)|(和|跟|与)[^，。？！]{0,12}比较|"
           rf"({EACH_STORE_WORDS}|几家店|所有店|所有门店)[^，。？！]{{0,6}}(比|PK)", 3, COMPARE_STORES),
    # 「哪家店最忙」 compares stores (by orders); 「几点最忙」 alone is the hourly peak.
    Signal("哪家最忙", DATA, r"哪(家|间|个)(门店|分店|店)?[^，。？！]{0,4}(最忙|人最多|客人最多|客流最)", 3, COMPARE_STORES),
    Signal("各店", DATA, r"各店|各门店|各家", 1, COMPARE_STORES),
    Signal("高峰时段", DATA, r"高峰|最忙|最旺|忙的时段|(?<!那个)(?<!这个)(?<!某个)(?<![这那该此某])时段|时间段|每小时|按小时|几点(钟)?(最(忙|多|旺|火)|人最|客人最|单子?最)|什么时[候间](人|客人|单子?)?最|啥时候最", 3, HOURLY_PEAK),
    # 「上周每天卖了多少」「这个月每天的营业额」: a figure per day, not one total
    Signal("每日趋势", DATA, r"(每天|每日|逐日|按天|每一天)[^，。？！]{0,8}(卖|营业额|销售额|营收|流水|业绩|订单|单量|多少单|几单|生意)|(营业额|销售额|营收|流水|业绩|订单|单量)[^，。？！]{0,6}(趋势|走势|每天|每日|按天)|"
           r"哪一?天[^，。？！]{0,8}(最|比较)(好|多|忙|旺|火|高|差|少|冷清)", 3, DAILY_TREND),
    Signal("库存告急", DATA, r"(?<!安全)(?<!盘)(?<!盘点)库存(?!(要|都|也|得|需要|也要)?盘)|低于安全|低库存|缺货|缺什么|缺啥|断货|断获|快没了|快没货|没货了|快卖完|卖光|不够卖|不够了|够不够卖|还够吗|还剩多少(?!钱)|(?<!还)剩多少(?!钱)|还?剩下?(几|多少)(瓶|箱|杯|份|桶)|还有(多少|几)(瓶|箱|杯|份|桶|货)|(库存|存货)还有多少|见底|补什么货|该补货|要补货", 2, LOW_STOCK),
    # 「把卡里余额打出来给他看」 asks whether staff may (a rule), not what the balance is.
    Signal("会员余额", DATA, r"余额(?![^，。？！]{0,6}(打出来|打印|截图|截屏|拍照|拍下来|发给|给他看|给客人看|给她看))|储值.{0,4}(还有|多少)|卡[里上内中]?.{0,4}(还有|还剩|剩下?|有)多少|"
           r"(?<![A-Za-z0-9])M\d{5}(?!\d)[^，。？！]{0,8}储值|储值[^，。？！]{0,6}(?<![A-Za-z0-9])M\d{5}(?!\d)|"
           r"((?<![A-Za-z0-9])M\d{5}|(?<!\d)1[3-9]\d{9})(?!\d)[^，。？！]{0,8}(还有|还剩|剩下?|有|能用|可以用|可用|能花)多少钱?", 2, MEMBER_BALANCE),
    Signal("时间范围", DATA, r"今天|今儿|昨天|昨儿|前天|上周|本周|这周|礼拜|星期|上个?月|本月|这个?月|月初|最近\s*\S{1,2}天|近\s*\d+\s*天|这两天|周末|国庆|双十一|\d+月\d+[日号]|\d+\.\d+-\d+\.\d+|到目前为止|截至", 1),

    # --- policy: how things are done, whether they are allowed, who decides -----------------------
    # … plus the spoken forms: 「…发他微信可以不」「…拉两箱来行不」「写一笔就行了吧」「外卖还接不接」.
    Signal("能不能", POLICY, r"能[^，。？！]{0,12}[吗嘛么]|可以[^，。？！]{0,12}[吗嘛么]|能不能|可不可以|行不行|会不会|(就|才)?行吗|允许|要不要|"
           r"(可以|行|能|成)不(?=[，。？！?!\s]|$)|(可以|能)[^，。？！不]{1,12}不(?=[，。？！?!\s]|$)|(就|才)?(行|可以)了?吧|(?P<verb>[接收给用卖送开退换让带放拿办签补做报管算记写查发刷打])不(?P=verb)", 2, frame=True),
    Signal("怎么办", POLICY, r"怎么(?!样)|咋(办|处理|整|弄)|如何(?!\s*$)|怎样", 2, frame=True),
    # 「科罗娜卖光了 跟客人推啥替代」: what to offer instead is the 沽清 rule (it was read as stock left).
    Signal("推荐什么", POLICY, r"推荐?[点个]?(啥|什么|哪个|哪款)|(啥|什么)替代|替代品", 2, frame=True),
    # 指标/KPI (any case: signals ignore it): the target a rule sets (「有效客诉每万元营业额的指标是多少」), not the store's figure.
    Signal("规定", POLICY, r"规定|规则|流程|制度|标准|要求|政策|条款|须知|注意事项|口径|考核|指标|KPI", 2),
    Signal("谁来做", POLICY, r"谁(来)?(批|审批|同意|签字|负责|处理|说)|(跟|找|告诉|通知|报给|问)谁|要谁|要报|上报|报上去|报备|做哪些准备|要准备|提前几天", 2),
    # … and a threshold a rule sets (「保质期剩多少就拒收」「占比超过多少要查原因」): 多少 asks where the
    # line is, not for a figure of the store's.
    Signal("算不算", POLICY, r"多少.{0,4}算|算(是)?(低|高|缺|哪|谁|在)|怎么算|(超过|超出|低于|高于|少于|多于|不到|不足|剩|达到|满)多少"
           r"(以上|以下)?(就|才|要|得|需要|必须|该|时)", 2),
    Signal("库存规则", POLICY, r"安全库存(是|一般|标准|怎么|多少|定|设)|什么时候(要|该|需要)?补货|补货(的)?(规定|流程|时间|周期|标准|数量)", 3),
    Signal("细节", POLICY, r"什么情况|哪些情况|什么时候|啥时候|最晚|最迟|多久|几天|几点|多少钱|多少度|几度", 1, frame=True),
    Signal("知识", POLICY, r"是什么|什么意思|区别|有什么|哪些|多厚|多长|保质期", 1, frame=True),
    Signal("门店话题", POLICY, r"客人|顾客|店员|员工|新人|店长|会员|储值|优惠券|团购|发票|存酒|包厢|扎啤|威士忌|黑牌|鸡尾酒|外卖|退款|退卡|投诉", 1, topic=True),

    # --- out of scope: declined with a one-line reason --------------------------------------------
    # Topics: declined unless the question is also about the store (「客人在减肥…」 is about a guest).
    Signal("与门店无关", OUT_OF_SCOPE, r"天气|会不会下雨|会下雨吗|要不要带伞|股票|基金|彩票|你是谁|你叫什么|新闻|比赛结果|电影|菜谱|减肥"
           r"|上证|深证|大盘(?!鸡)|纳斯达克|道琼斯|比特币|以太坊|虚拟币|币圈", 3),
    # The asker's own home and family (「家里油烟机油太多了怎么清洗」「家用面包机做吐司求个配方」「我爸有糖尿病能吃什么水果」):
    # food, drink and appliances are words of the store's world too, so only a word of the job
    # (names_the_job: 店, 客人, 请假, 储值, 打包 …) makes such a question the store's. Not 我家 or 我们家 (staff
    # say it of their chain: 「我家招牌鸡尾酒是哪几款」), nor 家 inside another word (现在家长, 商家用, 大家里,
    # 带回家里, 家庭装) or 女儿红 (a wine).
    Signal("个人生活", OUT_OF_SCOPE, r"(?<![现存放坐商大实住])在家(?![长庭])|(?<![大回商])家里|(?<![商大])家用|老家|"
           r"(我|俺)的?(妈|爸|老妈|老爸|爹|娘|父母|爸妈|爷爷|奶奶|外婆|姥姥|外公|姥爷|老婆|老公|媳妇|对象|男朋友|女朋友|男友|女友|儿子|女儿(?!红)|孩子|娃|宝宝|闺女)"
           r"|我的快递|驾照|驾校|科目[一二三四]", 3),
    # Tasks: a poem about beer is still a poem; a letter to a girlfriend or a program is not the store's.
    Signal("代写与作业", OUT_OF_SCOPE, r"等于几|解方程|写(一首|首|一篇|篇)?[^，。？！]{0,8}(诗|歌词|小说|绝句|律诗|对联)|写(一篇|篇)?作文|作文|翻译|讲个?笑话|作业|数学题"
           r"|写[^，。？！]{0,6}(情书|情话|表白)|写[^，。？！]{0,8}给(我的?)?(女朋友|男朋友|女友|男友|老婆|老公|对象|前任)"
           r"|写[^，。？！]{0,8}(代码|程序|脚本|算法)|冒泡排序|编程", 3),
    # 「外卖收入多少」 is the store's revenue: 收入 is pay only of a person.
    Signal("薪资", OUT_OF_SCOPE, r"(工资|薪水|薪资|月薪|年薪|奖金|(员工|店员|店长|服务员|调酒师|经理|主管|我|你|他|她)的?收入)[^，。？！]{0,4}(是|有|拿)?(多少|几千|几万)", 3),
    # Asking *for* someone's number, ID or address; a phone call said in passing (「店长打电话说晚点到」,
    # 「经理来电话让我先开门」「区域经理电话一直打不通」) asks for nothing of the kind.
    Signal("他人隐私", OUT_OF_SCOPE, r"(员工|店员|店长|同事|经理|老板|主管|小[王李张刘陈杨黄赵]|[张王李赵刘陈][三四五])[^，。？！]{0,6}"
           r"(?<![打接来回通])(手机号码?|电话号码?|电话|联系方式|身份证号?|家庭住址|住址|微信号?)(?!(说|打|通知|来|过来|叫|让|讲|问|一直|老是|总是|没人|不通|占线|关机|停机))"
           r"[^，。？！]{0,6}(是多少|多少|给我|发我|告诉我|查一?下|是啥|是什么|在哪|[？?]|$)|(家住|住在)(在)?哪", 3),
)

# Deciding a proposal in chat (「确认提案7」「驳回 #12」): done on the proposal card, never by the assistant.
_DECIDE_VERBS = "确认|批准|同意|通过|驳回|拒绝|否决"
DECIDE_PROPOSAL = re.compile(rf"({_DECIDE_VERBS})[^，。？！\d#]{{0,4}}"
                             r"(?:(?:提案|补货单|补货申请|工单)\s*#?\s*(\d+)|#\s*(\d+)|(\d+)\s*号?(?:提案|补货单|补货申请|补货|工单))")
# 「确认提案」「批了吧」 with no number, right after this thread made a proposal: that proposal.
DECIDE_THIS = re.compile(rf"\s*(帮我|麻烦)?({_DECIDE_VERBS}|批了?)(一下)?(这个|这张|该|刚才的?|刚刚的?)?"
                         r"(提案|补货单|补货申请|申请|工单)?[吧了。！!\s]*")

# 「撤回刚才那个工单」「算了先不补了」「撤回提案3」: the asker takes back a proposal (it was answered
# from the rule on 撤销核销, a group-buy voucher). Not a question about one, and not another thing
# that is withdrawn or cancelled (a voucher, an order, a booking).
WITHDRAW_PROPOSAL = re.compile(r"^(算了|那|那就|帮我|我要|我想|还是)*[，,\s]*(撤回|撤销|取消|不要了|不补了|别补了|先不补了?|不用补了|不建了|先不建了?|别建了?|不用建了?)"
                               r"|(撤回|撤销|取消)(刚才|刚刚|这个|那个|这张)?的?(那个|这个)?(工单|提案|补货单?|补货申请|申请|客诉单|投诉单)")
NOT_A_PROPOSAL = re.compile(r"核销|订单|单子|账单|那单|结账|券|会员|储值|积分|退款|发票|预订|预定|预约|订位|包厢|存酒|活动|打卡|排班|请假")
# Someone else, or a table: 「他说不要了」「客人把外卖取消了」 tell what happened, they withdraw nothing.
SOMEONE_ELSE = re.compile(r"他|她|客人|顾客|客户|对方|那桌|桌号|\d+\s*号?桌")
WITHDRAW_MAX_CHARS = 20

# 「把26号补货拒了」「12号提案批了吧」: the same, with the number first and the verb after.
DECIDE_PROPOSAL_AFTER = re.compile(rf"#?\s*(\d+)\s*号?(?:提案|补货单|补货申请|补货|工单)[^，。？！\d]{{0,4}}({_DECIDE_VERBS}|拒掉|拒了|批了)"
                                   r"(?!了?[吗没嘛]|没有)")  # 「12号提案批了吗」 asks where it stands
# 「批了吗」「确认一下15号补货到了没有」: where something stands, not a decision (the second is a
# delivery on the 15th, not proposal #15).
# (「能帮我确认提案7吗」 is a request: the card is the answer.)
ASKS_WHERE_IT_STANDS = re.compile(r"[了过][吗嘛]|了没|没有[？?。\s]*$|到了没|到没到|(批|确认)没(批|确认)")

# Where the asker's proposals stand (「我刚提的补货申请店长批了没」「补货单状态」), or which wait for
# them (「有哪些待我确认的补货申请」): read from the proposals, not searched in the rules.
_PROPOSAL_WORDS = r"(提案|补货申请|补货单|提的补货|申请的补货|补货|工单|客诉单|我的申请|我提的申请|我申请的|(这|那|刚才)个?申请|刚才那个)"
PROPOSAL_STATUS = re.compile(_PROPOSAL_WORDS + r"[^，。？！]{0,10}(批了没|批了吗|批没批|批下来|通过了[吗没]|状态|进度|怎么样了|到哪一?步|"
                             r"有结果了?[吗没]|处理了[吗没]|确认了[吗没]|有没有批|被拒|拒了[吗没]?$|驳回了|建好了[吗没]|好了[吗没])")
# One proposal by its number (「提案6是什么」「#12 批了没」「6号补货单怎么样了」): that proposal, if the asker may see it.
# A number followed by 号桌/台/包… is a table or a room (「帮我建个投诉工单 8号桌客人说…」), never a proposal.
_NOT_A_TABLE = r"(?!\d|\s*号?\s*(?:桌|台|包|房|位|卡座))"
PROPOSAL_NUMBER = re.compile(r"(?:提案|补货单|补货申请|工单)\s*#?\s*(\d{1,9})" + _NOT_A_TABLE + r"|#\s*(\d{1,9})" + _NOT_A_TABLE
                             + r"|(?<!\d)(\d{1,9})\s*号(?:提案|补货单|补货申请|工单)")
# A reply to a step of a restock or a ticket, said alone: 「算了」「先不补了」, 「五箱吧」「就3箱」.
BARE_CANCEL = re.compile(r"\s*(算了|不用了|不要了|取消|不补了|别补了|先不补了?|先不用了?|先不要了?|不建了|先不建了?)[吧啊呀]?[。！!\s]*")
# A message that asks something (「要送医院吗」「怎么处理」): not more details of a ticket just proposed.
ASKS_SOMETHING = re.compile(r"[？?]|吗|呢|怎么|咋|什么|啥|多少|几[个点天次分]|哪|谁|为什么|为啥|能不能|可不可以|可以吗|要不要|需不需要|是不是|是否|如何")


# More of a complaint just filed (「桌号A5 他吃了一口」「大概晚上八点」「客人说要曝光」): who, where, when, what
# happened. A bare topic (「发票规定」), a thanks or a cancel (「撤销这个工单」) is none.
COMPLAINT_DETAIL = re.compile(r"他|她|客人|顾客|对方|那桌|桌号|\d+\s*号?桌|[A-Za-z]\d{1,3}(?![A-Za-z\d])|刚才|刚刚|现在|当时|后来|"
                              r"[\d一二两三四五六七八九十]+\s*[点时分]|点钟|分钟|吃了|喝了|一口|要求|赔|报警|曝光|差评|媒体|发到网上")
# 「要补吗」「需要补货吗」 right after a product's stock: whether to, from those figures (it was answered
# with the restock rules, or declined as unrelated).
SHOULD_RESTOCK = re.compile(r"\s*(那|那么)?(现在|这个)?(要|需要|该|用不用|要不要|需不需要|得)(补|补货|补一下|补点)(了)?(吗|么|嘛|不|没)?[？?。！!\s]*")
# A message that starts from someone or something the previous answer was about (「他朋友说没事让我们接着上」
# after a drunk guest, 「为啥要问这个」 after the steps, 「他能打印出来给他吗」 after a member's balance).
REFERS_BACK = re.compile(r"^(他|她|他们|她们|对方|这个|这种|这样|那个|那种|为啥|为什么)")
# 「严重程度改成严重」「类别改成食品安全」 right after a ticket was proposed: that field of it (it was answered
# from the rules on severity). The values are the ticket's own.
CHANGE_THE_TICKET = re.compile(r"\s*(把)?(这个|刚才的?)?(工单|提案)?(的)?(?P<field>严重程度|严重性|级别|等级|类别|分类|类型)?\s*"
                               r"(?P<verb>改成|改为|调成|调到|设为|设成|换成|算)\s*(?P<value>[\u4e00-\u9fff]{2,4}?)(级|类)?[吧了。！!\s]*")
SEVERITY_FIELD = re.compile(r"严重程度|严重性|级别|等级")
CANCEL_A_PROPOSAL = re.compile(r"撤销|撤回|取消|别建|不建|不用建|算了|不要了")
# 「哪个酒卖得最好」: every kind of alcohol; not 酒吧/酒店 (places), 下酒菜 (food) or 无酒精/不含酒 (soft drinks).
ANY_ALCOHOL = re.compile(r"(?<!下)(?<!不含)(?<!无)酒(?![吧店馆楼精菜])")
SOFT_DRINKS = re.compile(r"饮料|饮品|无酒精|不含酒")
EVERY_PRODUCT = re.compile(r"全部|所有|全品类|不分(品类|类别)")
# 「没什么不舒服」「没有哪里不舒服」: said to rule an illness out, not in.
NOT_ILL = re.compile(r"没(有)?(什么|哪里|觉得|感到|感觉|啥)?(不舒服|不适|事)")


# 「刚才说的第二步是啥」「第三条再说一遍」「那第4点呢」: one numbered item of the previous answer.
STEP_AGAIN = re.compile(
    r"\s*(那|那么)?(你|您)?(刚才|刚刚|上面|前面)?(说|讲|提|列)?(的|过的)?第\s*(?P<n>[一二两三四五六七八九十\d]{1,3})\s*(个步骤|个|步|条|点|项)"
    r"(是|说的是|讲的是)?(啥|什么|哪个)?(意思)?(来着)?(再说一遍|再说一下|再讲一遍|再讲一下|具体怎么做|怎么做|呢|没看懂|没听清)?"
    r"[？?。！!，,\s]*")
# A numbered line of an answer: 「2. 询问客人是否已经饮用…[1]」.
# (「3.5 升以下」 is no step 3.)
NUMBERED_LINE = re.compile(r"\s*(?P<n>\d{1,2})\s*(?:[.．](?!\d)|[、)）])\s*(?P<line>\S.*)")


# A message that is only a greeting, thanks, an acknowledgement or a goodbye (「你好」「谢谢」「在吗」
# 「好的」「收到」「拜拜」), or only emoji: answered in a line, not searched in the SOPs (「你好」 was
# answered from 负面舆情 and filed as an unanswered question). Words of talk itself, for any chain.
SMALL_TALK = {
    "greeting": re.compile(r"(你好|您好|你们好|大家好|哈喽|嗨|hi|hello|hey|在吗|在不在|在么|有人吗|早上?好?|早安|中午好|下午好|晚上好)"),
    "thanks": re.compile(r"(谢谢你?|谢谢您|谢了|多谢|感谢|辛苦了?|thx|thanks|thank you)"),
    "ack": re.compile(r"(好的?|好吧|好滴|好嘞|行|可以|嗯+|哦+|噢+|ok|okay|收到|明白了?|知道了|了解了?|懂了|没问题|对|是的|👌|👍)"),
    "bye": re.compile(r"(再见|拜拜|bye|回头见|下班了|先这样)"),
    "laugh": re.compile(r"(哈+|呵+|嘿+|嘻+|h{2,}|6{3,}|lol|牛|厉害|可以啊|不错)"),
    # 「你是谁」「你能做什么」: what the assistant is for, in a line.
    "about": re.compile(r"((你|您)(是谁|是什么|是干什么的|是做什么的|叫什么)|(你|您)(能|会|可以)(帮我)?(做|干|帮)(什么|啥|些什么|点啥)"
                        r"|(你|您)有(什么|啥)用|怎么用你|你都会(什么|啥)|有什么功能|能问(什么|啥)"
                        r"|(你|您)是(不是)?(chatgpt|gpt|deepseek|豆包|ai|人工智能|机器人|真人|真的人)(吗|么|嘛)?)"),
}
SMALL_TALK_TAIL = r"[啊呀呢哈啦嘛吧哟~～\s。，,.!！?？]*"
SMALL_TALK_ANY = re.compile("(?:(?:" + "|".join(w.pattern for w in SMALL_TALK.values()) + ")" + SMALL_TALK_TAIL + ")+")
# Emoji and pictographs only (「🍺🍺🍺」): nothing to search for.
ONLY_SYMBOLS = re.compile(r"[\s\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200D。，,.!！?？~～…]+")
BARE_QUANTITY = re.compile(r"\s*(那就|就|要|改成|改为|来)?\s*(\d+|[零〇一二两三四五六七八九十百]+)\s*(箱|瓶|杯|份|件|桶|个)"
                           r"\s*(吧|就行了?|就好|就够了?|好了|可以了|够了)?[。！!\s]*")
# 「科罗娜还有多少」「黑方还有没有货」: with a product named, how much of it is left (stock), not a rule.
# 「补科罗娜」: 补 and a product's name, nothing else (「补签」「补打小票」 name no product).
# 「科罗娜补一下」「科罗娜按建议量补」: the product first, then 补 (it was answered from the rule on 沽清).
PRODUCT_TO_RESTOCK = re.compile(r"\s*(那|那个|还有)?([^，。？！\d\s]{1,8}?店的?)?(?P<what>[^，。？！\d\s]{1,10}?)(帮我)?(按(你的?)?建议的?(量|数量)?)?补(一下|点|些|一点|一些|上)?(货)?"
                                r"\s*(吧|呗)?\s*[。！!]?\s*")
RESTOCK_A_PRODUCT = re.compile(r"\s*(我要|我想|要|想|帮忙)?(申请)?补货?\s*[：:，,\s]*(?P<what>[^，。？！\d\s]{1,10}?)\s*[。！!]?\s*")
# 「帮我补吧」「那就都补上」「按建议补」 said to 「要我为…生成补货提案吗？」: a yes in the words of the
# request itself (it was answered from the rule on 补卡, the missed clock-in).
ACCEPT_RESTOCK_OFFER = re.compile(r"\s*(好|好的|行|嗯)?[，,\s]*(那|那就|就)?(你)?(帮我|给我|麻烦|替我|请)?(都|全都|全部|一起)?"
                                  r"(按(你的?)?建议(的?量)?)?(补|补货|补上|补一下|下单|生成|提交|提一下)(货|上|一下)?(都|全部)?"
                                  r"\s*(吧|呗|啊|呀|去吧)?[。！!\s]*")
# A guest's stored bottle (「存的黑牌还有多少」) is not the bar's stock.
STOCK_LEFT = re.compile(r"^(?![^\n]*(存的|存酒|寄存))[^\n]*?((还有|还剩|剩下?)(多少|几)(?![钱天年次个人客位种])|还有没有货?|还有货|有货吗|有没有货|"
                        r"还有[吗嘛么没]|还剩[吗嘛么])")  # 「科罗娜还有吗」: the router still needs a product named
ASKS_HOW = re.compile(r"怎么办|咋办|咋整|怎么处理|如何处理|怎么弄|规定|流程|能不能|可不可以|可以吗|要不要")
WHY_REFUSED = re.compile(r"(为什么|为啥|怎么)被?(拒|驳回|否决)")
AWAITING_ME = re.compile(r"(待|等)[我你]?(确认|审批|处理|批)的?[^，。？！]{0,4}" + _PROPOSAL_WORDS + r"|(等|待)[我你](确认|审批|处理|批)|"
                         + _PROPOSAL_WORDS + r"[^，。？！]{0,6}(待|等)[我你](确认|审批|处理|批)|"
                         r"(员工|店员|大家|他们)(提|交|申请)的" + _PROPOSAL_WORDS + r"[^，。？！]{0,4}(有哪些|有几个|有多少)|"
                         # 「有需要我确认的补货吗」「我有几个要审批的补货申请」: 我/你 or 有几个… says whose list;
                         # 「补货需要店长审批吗」 names someone else and asks the rule, and 「我要确认一下补货到了没有」
                         # (no 的: checking, not proposals to decide) is a delivery.
                         r"((需要|要|该|得)[我你]|[我你](需要|要|该|得)|(有几个|有多少|有哪些|有没有)(需要|要|待|该))"
                         r"[我你]?(来)?(确认|审批|处理|批)的[^，。？！]{0,4}" + _PROPOSAL_WORDS)

# 「查看审计记录」「未解答问题在哪看」: where a page of the product is, said in one line (it
# was declined as unrelated to the store). Each: the page's words, its name, its address (by
# URL name: a page that moves is not mis-addressed here).
PAGES = (
    (re.compile(r"审计(记录|日志)|操作日志"), "审计记录", reverse_lazy("workflow:audit"), "「操作提案」页面下方也有最近的记录"),
    (re.compile(r"未解答(的)?问题|没答上的问题"), "未解答问题", reverse_lazy("admin:agent_unansweredquestion_changelist"), "顶部菜单「后台」里"),
    (re.compile(r"(待确认|待处理|待审批)的?(提案|补货申请|工单)|操作提案|提案列表"), "操作提案", reverse_lazy("workflow:proposals"), "顶部菜单「操作提案」"),
    (re.compile(r"接口文档|API\s*文档", re.IGNORECASE), "接口文档", reverse_lazy("api-docs"),
     format_lazy("OpenAPI 描述在 {}", reverse_lazy("schema"))),
)
SHOW_ME = re.compile(r"^(我要|我想|帮我|请)?(查看|打开|看看|看一下|看下|找)|(在哪(里|儿)?|哪里|去哪|怎么|如何)(看|查看|找|打开)|在哪(里|儿)?[？?]?$")


# Words of a follow-up that ask *about* the last answer rather than name a new thing
# (「那要不要打120」「那要多久」): such a follow-up continues the previous answer's section.
FOLLOW_UP_FUNCTION_WORDS = frozenset(
    "不要 不能 可以 能够 多久 多长 别的 怎么 怎样 什么 哪些 哪个 需要 应该 还要 还能 还是 一下 多少 几天 几次 是不是 是否 一定 必须 要是 假如 万一 的话".split())

# Policy signals that are only question words: they ask *for* something, data or rule alike.
QUESTION_WORD_SIGNALS = ("细节", "知识")

# Words that put a question in a store's or a workplace's world. A question nothing in the
# corpus answers is a gap in the rules (the unanswered list) when it is about the store, and
# out of scope when it is not (「明天会下雨吗」「红烧肉怎么做」).
STORE_CONTEXT = re.compile(
    r"店|客人|顾客|客户|员工|同事|新人|师傅|主管|经理|老板|领班|公司|总部|区域|上班|下班|班次|排班|值班|请假|加班|兼职|"
    r"工资|入职|离职|试用期|培训|考勤|吧台|后厨|厨房|仓库|收银|买单|结账|点单|下单|出品|上菜|酒|啤|饮料|饮品|杯|桌|包厢|卡座|"
    r"会员|储值|优惠|活动|团购|外卖|骑手|发票|小票|投诉|退款|库存|补货|盘点|供货|供应商|营业|开门|关门|打烊|消防|卫生|"
    r"清洁|消毒|设备|POS|收银机|菜单|酒水单|营业额|生意|销量|销售|客流|单量|订单|营收|流水|业绩|朋友圈|抖音|小红书|点评|wifi|咖啡|烟感|报警器|"
    # the bar's own food
    r"小吃|炸鸡|鸡翅|薯条|果盘|菜品|出餐|"
    # the job: pay, contracts, leave, uniforms
    r"年终奖|奖金|绩效|提成|福利|补贴|报销|社保|公积金|劳动合同|合同|辞职|辞退|转正|晋升|升职|调岗|工服|制服|工牌|宿舍|团建|"
    r"婚假|产假|病假|年假|事假|调休|休假|休息|休一天|歇一天|换班|调班|体检|健康证|面试|招聘|"
    # the premises
    r"门口|招牌|灯箱|乐队|驻场|演出|音响|背景音乐|装修|房租|租金|洗手间|卫生间|空调|舞台|绿植|前台|大堂|"
    # a member number (「帮我查下M00010最近消费了啥」 was declined as unrelated to the store)
    r"(?<![a-z])m\d{4,}(?!\d)|消费记录|消费明细",
    re.IGNORECASE,
)


# A price is on the drinks list: 「扎啤一杯现在卖多少钱」「多少钱一瓶」「单价」 (not 客单价).
_UNITS = "杯|份|瓶|扎|个|打|桶|支|罐|位|例|盘|碟|听"
PRICE = re.compile(rf"(一|每|单|整)({_UNITS})[^，。？！]{{0,6}}(卖|收|要|是)?多少钱?|多少钱一({_UNITS})|(?<!客)单价|售价|定价|价格|什么价|啥价")
# Asking what something costs (「百威一瓶卖多少」「红酒多少钱一瓶」), not a price merely mentioned
# (「客人嫌百威价格贵，能打折吗」 asks about a discount): with a catalog product named and no price for
# it in the SOPs, the question goes to the POS (pipeline.unpriced).
PRICE_ASKED = re.compile(rf"多少钱|什么价|啥价|(价格|价钱|售价|单价|定价)[是为]?(多少|几)|卖多少|几块钱|多少一({_UNITS})")
UNPRICED = {"topic": "商品售价", "ask": "值班主管，价格以 POS 里的为准"}
# Someone other than the asker wants to look something up (「客人姐姐…想查她弟弟卡里…」). 他/她 not
# inside 其他, 一个 not in 一个月.
THIRD_PARTY_WANTS = re.compile(
    r"(客人|顾客|有人|有个人|一个(?![月星礼])[^，。？！]{0,3}|(?<!其)[他她]|对方|别人)[^，。？！]{0,10}(想|要|让我|叫我|非要)(查|看|知道|打听)|"
    # 「客人打电话问卡里还剩多少」: what may be told over the phone is the question, not the figure
    r"(打|来)(个|了)?电话[^，。？！]{0,3}问|电话里[^，。？！]{0,3}问|"
    r"(查|看|问)[他她]的?(弟弟|哥哥|姐姐|妹妹|老公|老婆|丈夫|妻子|男朋友|女朋友|朋友|家人|爸|妈|儿子|女儿|同事)")
# 「午高峰现抄的饭最多几分钟要出」「高峰期店长能在办公室做报表吗」: the rush as the time something
# happens, not the busiest hours asked for (「福田店昨天高峰是几点」「各店上周高峰时段」).
PEAK_AS_A_TIME = re.compile(r"[早午晚]高峰|高峰期|高峰的时候|高峰时(?!段)")
PEAK_ASKED = re.compile(r"高峰(期|时段|时间)?(是|在)?(几点|哪|什么时|啥时)|哪(个|段)时|最忙|最旺|每小时|按小时")
# Posting a figure where the public sees it (the social-media rules), not sending it to someone.
PUBLISHES = re.compile(r"(发|晒|传)[^，。？！]{0,3}(朋友圈|抖音|小红书|微博|视频号|快手)")
# Pay *rules* (when pay rises, when it is paid, what is docked) are about the job; a named
# person's pay (「小王工资扣了多少」「店长工资涨到多少了」) is still declined.
PAY_RULES = re.compile(r"转正|试用期|什么时候涨|多久(能|才|会)?涨|怎么(扣|算|涨)|会不会扣|几号发|什么时候发|啥时候发|调薪|加薪")
SOMEONE_ELSE = re.compile(r"员工|店员|店长|同事|经理|老板|主管|别人|小[王李张刘陈杨黄赵]|[张王李赵刘陈][三四五]|(?<!其)[他她]的?(工资|薪)")


# A member's key, exactly: the full phone number or the member number (M + five digits). The one
# definition the planner, the router and the slots read.
PHONE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")
MEMBER_NO = re.compile(r"(?<![A-Za-z0-9])M\d{5}(?!\d)", re.IGNORECASE)
MEMBER_KEY = re.compile(f"{PHONE.pattern}|{MEMBER_NO.pattern}", re.IGNORECASE)
# Looser on purpose: anything that looks like a member number or a phone (M1001, an 11-digit number
# starting 1) is read as 「会员」/「手机号」 when the rules are searched; only the tools need the exact key.
_LOOKS_LIKE_MEMBER_NO = re.compile(r"(?<![a-z\d])m\d{4,}(?!\d)", re.IGNORECASE)
_LOOKS_LIKE_PHONE = re.compile(r"(?<!\d)1\d{10}(?!\d)")


def as_rule_words(text: str) -> str:
    """A member's number or phone read as the rules say it (「会员」, 「手机号」): no rule names M00010."""
    return _LOOKS_LIKE_PHONE.sub("手机号", _LOOKS_LIKE_MEMBER_NO.sub("会员", text or ""))


# Lexicon words that are everyday life as much as the job (「推荐几本小说」「孩子不爱写作业」「照片怎么
# 保存」): they alone do not put a question in the store's world.
LIFE_WORDS = frozenset("推荐 孩子 小孩 宝宝 存款 训练 入库 出水 炸锅 上班族 减肥 旅游 保存 存放 储存 储藏".split())


# The words a question's intent turns on, repaired when typed by their sound (a pinyin IME picks
# the wrong characters: 「天河店上周卖了躲少」 was read as a rules question). Only words no common
# phrase sounds like: 卖了 is also 买了, 销量 a colleague 小梁, 怎么办 「凉菜怎么拌」. A two-character
# one only with its first character wrong (躲少, 裤存), never 「多烧一会」「多勺糖」.
SOUND_REPAIRED = ("多少", "库存", "营业额", "销售额", "客单价")
def sound_repaired(text: str) -> str:
    """`text` with each stretch of 2–3 characters that is no word at all (jieba's dictionary) but
    sounds exactly like one of SOUND_REPAIRED replaced by it (「躲少」 → 多少, 「营业鹅」 → 营业额). A real
    word is never replaced, and a window never cuts through a word jieba found."""
    from knowledge.lexicon import non_word_windows, pinyin_of

    by_sound = {pinyin_of(w): w for w in SOUND_REPAIRED}
    out = text or ""
    for window in non_word_windows(out, (2, 3)):
        word = by_sound.get(pinyin_of(window))
        if word is not None and word != window and (len(window) > 2 or window[1:] == word[1:]):
            out = out.replace(window, word)
    return out


def about_the_store(text: str) -> bool:
    """A word of the store's or the job's world: this table's, or a word of the shipped domain
    lexicon (restaurant staff's everyday words: 砧板, 菜谱, 买单 …) said as a word, whatever the corpus."""
    from knowledge.lexicon import concepts_in
    from knowledge.text import contains_word

    text = text or ""
    if STORE_CONTEXT.search(text):
        return True
    return any(w not in LIFE_WORDS and contains_word(text, w) for w, _ in concepts_in(text))


# What a question about one's home or family must name to be the store's: a word of the store's
# world (STORE_CONTEXT) other than those home life shares (酒, 咖啡, 厨房, 清洁, 空调 …), or a word of
# serving guests (打包, 外带, 未成年 …): 「家里有事要请假找谁」「储值卡能转给家里人用吗」「未成年跟家里人一起来能卖酒吗」.
SHARED_WITH_HOME = frozenset("酒 啤 饮料 饮品 杯 咖啡 厨房 卫生 清洁 消毒 设备 空调 洗手间 卫生间 装修 房租 租金 休息 体检 "
                             "小吃 炸鸡 鸡翅 薯条 果盘 菜品 门口 朋友圈 抖音 小红书 点评 wifi 绿植 音响 背景音乐 合同 活动 生意".split())
SERVING_GUESTS = re.compile(r"打包|外带|堂食|未成年|积分|卖|有货|早退|提前走")


def names_the_job(text: str) -> bool:
    text = text or ""
    if SERVING_GUESTS.search(text):
        return True
    return any(m.group(0).lower() not in SHARED_WITH_HOME for m in STORE_CONTEXT.finditer(text))


DECLINE = {
    "与门店无关": "这个请求与门店运营无关，我只回答门店制度和经营数据方面的问题。",
    "个人生活": "这是个人生活方面的问题，与门店运营无关；我只回答门店制度和经营数据方面的问题。",
    "代写与作业": "这个请求与门店运营无关，我只回答门店制度和经营数据方面的问题。",
    "薪资": "员工的薪资属于个人信息，我不能提供；请找店长或人事。",
    "他人隐私": "其他人的个人信息（电话、证件、住址等）我不能提供。",
}


@dataclass(frozen=True)
class Hit:
    signal: Signal
    count: int

    @property
    def score(self) -> int:
        return self.signal.weight * self.count

    def label(self) -> str:
        return f"{self.signal.name}×{self.count}"


# 「卡里还剩多少」「会员卡上还剩多少」: what is left is a card's balance, not stock (the stock
# signal read 「还剩多少」 there and a restock was offered). Masked for the stock signal only.
CARD_LEFT = re.compile(r"卡[里上内中]?面?[^，。？！\s]{0,2}?(还剩|剩下?|还有)(多少|几)")


# 「除了在 app 上提工单还要干嘛」: what is already done, before 还/也 asks what else, is no request
# (it was routed as a request to file a ticket). Masked for the action signals only; a request
# after the 还 (「除了退款还要帮我提个工单」) still counts.
BESIDES = re.compile(r"除了[^，。？！?]{1,20}?(?:以外|之外)?[，,]?(?=还|也)")


# 「日营业额一万左右全职编制应该几个人」: a figure the asker gives as a condition (a sum with 左右,
# 以上的, 的话 …) asks for no figure (it was routed to the revenue query). Masked for the sales
# signals only; 「天河店上周营业额一万多吗」 still asks.
GIVEN_FIGURE = re.compile(r"(营业额|销售额|营收|流水)[^，。？！?]{0,3}?[0-9一二两三四五六七八九十百千万.]+[^，。？！?]{0,2}?"
                          r"(左右|上下|出头|以上的|以下的|的话|的店|的门店)")


def match(text: str) -> list[Hit]:
    """Every table entry the text matches, with how often."""
    hits = []
    stock_text = CARD_LEFT.sub("、", text or "")
    action_text = BESIDES.sub("、", text or "")
    sales_text = GIVEN_FIGURE.sub("、", text or "")
    for signal in SIGNALS:
        read = (stock_text if signal.tool == LOW_STOCK else action_text if signal.intent == ACTION
                else sales_text if signal.tool == STORE_SALES else (text or ""))
        found = signal.regex.findall(read)
        if found:
            hits.append(Hit(signal, len(found)))
    return hits


def score(hits: list[Hit], intent: str, *, topics: bool = True) -> int:
    return sum(h.score for h in hits if h.signal.intent == intent and (topics or not h.signal.topic))


def labels(hits: list[Hit], intent: str) -> list[str]:
    return [h.label() for h in hits if h.signal.intent == intent]


def tool_scores(hits: list[Hit]) -> dict[str, int]:
    scores: dict[str, int] = {}
    for h in hits:
        if h.signal.tool:
            scores[h.signal.tool] = scores.get(h.signal.tool, 0) + h.score
    return scores


def best_tool(scores: dict[str, int]) -> str | None:
    """The tool with the highest score; a tie goes to the earlier one in TOOL_PRIORITY, and a tool
    not listed there yields to every listed one (it raised ValueError for 4 of the 11 tools)."""
    if not scores:
        return None

    def rank(tool: str) -> int:
        return TOOL_PRIORITY.index(tool) if tool in TOOL_PRIORITY else len(TOOL_PRIORITY)

    return max(scores, key=lambda tool: (scores[tool], -rank(tool)))


def is_bare_restock_order(text: str) -> bool:
    """「补两箱」「青岛啤酒，补20箱」: an order by its words alone (no 帮我 …)."""
    return any(h.signal.name == "补货指令" for h in match(text))


# A guest's complaint told as it happened (「客人说鸡翅是生的」「8号桌客人嫌酒太淡」): when the rules have nothing for
# it, the refusal offers to file it as a ticket.
GUEST_COMPLAINS = re.compile(r"(客人|顾客|客户|那桌|[0-9一二三四五六七八九十]+号桌)[^，。？！?!]{0,6}(说|反映|反应|投诉|嫌|抱怨|吐槽)")
